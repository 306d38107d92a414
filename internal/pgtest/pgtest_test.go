package pgtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestNewDatabaseIsFreshAndIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	require.NotEqual(t, a, b)
	ca, err := pgx.Connect(ctx, a)
	require.NoError(t, err)
	defer ca.Close(ctx)
	_, err = ca.Exec(ctx, "CREATE TABLE t (x int)")
	require.NoError(t, err)

	cb, err := pgx.Connect(ctx, b)
	require.NoError(t, err)
	defer cb.Close(ctx)
	var n int
	require.NoError(t, cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n))
	require.Zero(t, n, "a table made in one test database is not in another")
	require.True(t, strings.HasPrefix(a, "postgres://"))
}

func TestRestartKeepsDataAndBreaksConnections(t *testing.T) {
	if pgtest.Shared(t).External() {
		t.Fatal("this test restarts the server: run it without " + pgtest.EnvURL)
	}
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (42)")
	require.NoError(t, err)

	pgtest.Restart(t)

	_, err = conn.Exec(ctx, "SELECT 1")
	require.Error(t, err, "the old connection is broken")
	again, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer again.Close(ctx)
	var x int
	require.NoError(t, again.QueryRow(ctx, "SELECT x FROM t").Scan(&x))
	require.Equal(t, 42, x, "committed data survives")
}
