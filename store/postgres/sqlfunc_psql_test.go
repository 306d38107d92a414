package postgres_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// psqlScript is an application's session in psql, as the README's "From
// other languages" shows it: a committed transaction, a rolled-back one,
// and two refused appends with their SQLSTATEs.
const psqlScript = `\set ON_ERROR_STOP 1
CREATE TABLE app_order (id text PRIMARY KEY, total int NOT NULL);
BEGIN;
INSERT INTO app_order VALUES ('1', 42);
SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":42}'::jsonb);
COMMIT;
BEGIN;
INSERT INTO app_order VALUES ('2', 7);
SELECT herald_append('orders/2', 'evt-2', 'order.created', '{"total":7}'::jsonb);
ROLLBACK;
SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":42}'::jsonb) AS again;
\set ON_ERROR_STOP 0
\set VERBOSITY verbose
SELECT herald_append('orders/1', 'evt-3', 'order created', '{}'::jsonb);
SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":43}'::jsonb);
`

// TestHeraldAppendFromPsql runs herald_append from outside Go: psql, the
// PostgreSQL client, against the test cluster. Without psql it fails (CI
// installs it with the server: .ci/run), it does not skip.
func TestHeraldAppendFromPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql, PostgreSQL's client, is needed for this test: apt-get install postgresql-client")
	d := newSQLDB(t)
	cmd := exec.CommandContext(t.Context(), psql, "-X", "-A", "-t", "-d", d.url, "-f", "-")
	cmd.Stdin = strings.NewReader(psqlScript)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "psql: %s", stderr.String())

	require.Equal(t, "BEGIN\nINSERT 0 1\nevt-1\nCOMMIT\nBEGIN\nINSERT 0 1\nevt-2\nROLLBACK\nevt-1\n",
		strings.ReplaceAll(stdout.String(), "CREATE TABLE\n", ""))
	require.Contains(t, stderr.String(), "ERROR:  HA400: herald_append: invalid kind: has whitespace U+0020 at byte 5")
	require.Contains(t, stderr.String(), `ERROR:  HA409: herald_append: record id "evt-1" already exists as orders/1#0 with a different payload`)

	require.Equal(t, 1, sequence(t, d.s), "one record committed")
	require.Equal(t, []string{"evt-1"}, readIDs(t, d.s, "orders/1"))
	require.Zero(t, head(t, d.s, "orders/2"), "the rolled-back one left nothing")
	var orders int
	require.NoError(t, d.s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM app_order`).Scan(&orders))
	require.Equal(t, 1, orders)
}
