package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// oneConn opens a database of one connection through openDB and returns
// it with a function reading that connection's cached query texts.
func oneConn(t *testing.T) (*sql.DB, func() map[string]bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := openDB(t.Context(), path, writerDSN(path, syncFull), 1)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	cached := func() map[string]bool {
		conn, err := db.Conn(t.Context())
		require.NoError(t, err)
		defer conn.Close()
		out := map[string]bool{}
		require.NoError(t, conn.Raw(func(c any) error {
			for q := range c.(*cachingConn).stmts {
				out[q] = true
			}
			return nil
		}))
		return out
	}
	return db, cached
}

func TestStatementCacheIsBoundedAndKeepsTheRecentlyUsed(t *testing.T) {
	db, cached := oneConn(t)
	hot := "SELECT 'hot'"
	for i := range 3 * stmtCacheSize {
		var n int
		require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT %d", i)).Scan(&n))
		require.Equal(t, i, n, "each text runs its own statement")
		var s string
		require.NoError(t, db.QueryRow(hot).Scan(&s))
	}
	got := cached()
	require.Len(t, got, stmtCacheSize, "the bound")
	require.True(t, got[hot], "the statement used at every step stays")
	require.False(t, got["SELECT 0"], "the least recently used went first")
}

// A cached statement never runs against the schema it was prepared for:
// SQLite prepares it again after a change, so a cache is never stale.
func TestStatementCacheFollowsSchemaChanges(t *testing.T) {
	db, cached := oneConn(t)
	ctx := context.Background()
	_, err := db.ExecContext(ctx, "CREATE TABLE t (a INTEGER)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO t (a) VALUES (?)", 1)
	require.NoError(t, err)
	columns := func() []string {
		rows, err := db.QueryContext(ctx, "SELECT * FROM t")
		require.NoError(t, err)
		defer rows.Close()
		cols, err := rows.Columns()
		require.NoError(t, err)
		return cols
	}
	require.Equal(t, []string{"a"}, columns())
	require.True(t, cached()["SELECT * FROM t"])
	_, err = db.ExecContext(ctx, "ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, columns(), "the cached statement sees the new column")
	_, err = db.ExecContext(ctx, "DROP TABLE t")
	require.NoError(t, err)
	_, err = db.QueryContext(ctx, "SELECT * FROM t")
	require.ErrorContains(t, err, "no such table", "nor a dropped table")
}

// A statement whose rows are open is not reused: the same text run again
// meanwhile (a query inside a scan) gets its own.
func TestStatementCacheNeverSharesOpenRows(t *testing.T) {
	db, _ := oneConn(t)
	tx, err := db.Begin()
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Exec("CREATE TABLE t (a INTEGER)")
	require.NoError(t, err)
	for i := range 3 {
		_, err = tx.Exec("INSERT INTO t (a) VALUES (?)", i)
		require.NoError(t, err)
	}
	const q = "SELECT a FROM t WHERE a >= ? ORDER BY a"
	outer, err := tx.Query(q, 0)
	require.NoError(t, err)
	var pairs []string
	for outer.Next() {
		var a int
		require.NoError(t, outer.Scan(&a))
		inner, err := tx.Query(q, a)
		require.NoError(t, err)
		for inner.Next() {
			var b int
			require.NoError(t, inner.Scan(&b))
			pairs = append(pairs, fmt.Sprintf("%d%d", a, b))
		}
		require.NoError(t, inner.Err())
		require.NoError(t, inner.Close())
	}
	require.NoError(t, outer.Err())
	require.Equal(t, []string{"00", "01", "02", "11", "12", "22"}, pairs)
}
