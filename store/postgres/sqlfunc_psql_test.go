package postgres_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeraldAppendFromPsql runs herald_append from outside Go: psql, the
// PostgreSQL client, against the test cluster, with the README's example
// (a committed transaction), then a rolled-back transaction, a repeat, an
// append with trace context, and three refused appends with their SQLSTATEs. Without psql it fails
// (./test.sh installs it with the server), it does not skip.
func TestHeraldAppendFromPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql, PostgreSQL's client, is needed for this test: run ./test.sh, which installs it, or apt-get install postgresql-client")
	d := newSQLDB(t)
	cmd := exec.CommandContext(t.Context(), psql, "-X", "-A", "-t", "-d", d.url, "-f", "-")
	script := "\\set ON_ERROR_STOP 1\nCREATE TABLE orders (id int PRIMARY KEY, total int NOT NULL);\n" + readmeSQL(t, "psql", "TestHeraldAppendFromPsql") + `BEGIN;
INSERT INTO orders VALUES (1002, 7);
SELECT herald_append('order/1002', 'order-1002-created', 'order.created', '{"id":1002,"total":7}'::jsonb);
ROLLBACK;
SELECT herald_append('order/1001', 'order-1001-created', 'order.created', '{"id":1001,"total":42}'::jsonb) AS again;
SELECT herald_append('order/1003', 'order-1003-created', 'order.created', '{"id":1003}'::jsonb,
                     traceparent => '` + traceTP + `', tracestate => 'shop=7');
\set ON_ERROR_STOP 0
\set VERBOSITY verbose
SELECT herald_append('order/1001', 'evt-3', 'order created', '{}'::jsonb);
SELECT herald_append('order/1001', 'order-1001-created', 'order.created', '{"id":1001,"total":43}'::jsonb);
SELECT herald_append('order/1001', 'evt-4', 'order.note', '{}'::jsonb, traceparent => '00-abc');
`
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "psql: %s", stderr.String())

	require.Equal(t, "BEGIN\nINSERT 0 1\norder-1001-created\nCOMMIT\nBEGIN\nINSERT 0 1\norder-1002-created\nROLLBACK\norder-1001-created\norder-1003-created\n",
		strings.ReplaceAll(stdout.String(), "CREATE TABLE\n", ""))
	require.Contains(t, stderr.String(), "ERROR:  HA400: herald_append: invalid kind: has whitespace U+0020 at byte 5")
	require.Contains(t, stderr.String(), `ERROR:  HA409: herald_append: record id "order-1001-created" already exists in order/1001, waiting to be numbered, with a different payload`)

	require.Contains(t, stderr.String(), `ERROR:  HA400: herald_append: invalid traceparent: "00-abc" is not version-traceid-parentid-flags`)

	require.Equal(t, 2, sequence(t, d.s), "two records committed")
	traced, err := d.s.Lookup(t.Context(), "order-1003-created")
	require.NoError(t, err)
	require.Equal(t, traceTP, traced.Traceparent)
	require.Equal(t, "shop=7", traced.Tracestate)
	require.Equal(t, []string{"order-1001-created"}, readIDs(t, d.s, "order/1001"))
	require.Zero(t, head(t, d.s, "order/1002"), "the rolled-back one left nothing")
	var orders int
	require.NoError(t, d.s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM orders`).Scan(&orders))
	require.Equal(t, 1, orders)
}
