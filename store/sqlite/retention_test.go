package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// TestPruneGivesTheSpaceBack: a file herald creates returns the pages that
// pruning frees to the file system, so the file shrinks.
func TestPruneGivesTheSpaceBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	payload := []byte(fmt.Sprintf(`{"pad":%q}`, bytes.Repeat([]byte("x"), 16<<10)))
	for i := range 20 {
		batch := make([]journal.Entry, 10)
		for j := range batch {
			batch[j] = journal.Entry{ID: fmt.Sprintf("r-%d-%d", i, j), Kind: "k", Payload: payload}
		}
		_, err := s.Append(ctx, "big", batch...)
		require.NoError(t, err)
	}
	_, err = s.Register(ctx, push.Registration{Stream: "big", ID: "done", Namespace: "webhook", URL: "https://r.example/", NextSeq: 201})
	require.NoError(t, err)
	before := pages(t, path)

	var total store.PruneReport
	for {
		rep, err := s.Prune(ctx, store.PruneQuery{At: time.Now().Add(time.Hour), Limit: 50})
		require.NoError(t, err)
		total = total.Add(rep)
		if !rep.More {
			break
		}
	}
	require.Equal(t, 200, total.Records)
	after := pages(t, path)
	require.Less(t, after, before/4, "the file gave back the pruned records' pages (%d → %d)", before, after)
}

func pages(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var mode, n int
	require.NoError(t, db.QueryRow("PRAGMA auto_vacuum").Scan(&mode))
	require.Equal(t, 2, mode, "herald creates files with incremental auto_vacuum")
	require.NoError(t, db.QueryRow("PRAGMA page_count").Scan(&n))
	return n // the file's size in pages, free ones included
}
