package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/store/storetest"
	"github.com/stretchr/testify/require"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return sqlite.OpenTemp(t) })
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

func TestOpenChecksOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, err := sqlite.Open(ctx, filepath.Join(dir, "b.db"), sqlite.WithClock(nil))
	require.ErrorIs(t, err, journal.ErrInvalid)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused option creates no file")
}

func TestInstantsOutsideTheStoredRangeAreRefused(t *testing.T) {
	ctx := context.Background()
	s := sqlite.OpenTemp(t)
	_, err := s.Append(ctx, "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.Register(ctx, store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/"})
	require.NoError(t, err)
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	require.ErrorIs(t, s.Retry(ctx, store.Claim{Stream: "s", ID: "r", Owner: "w"}, 1, far, store.Evidence{At: t0}), journal.ErrInvalid)
	require.ErrorIs(t, s.Unpark(ctx, "s", "r", far), journal.ErrInvalid)
	_, err = s.Due(ctx, store.DueQuery{At: t0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: far})
	require.ErrorIs(t, err, journal.ErrInvalid)
	st, err := s.Get(ctx, "s", "r")
	require.NoError(t, err)
	require.Zero(t, st.Attempts, "nothing changed")
	require.Empty(t, st.LeaseOwner)
}

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
	_, err = s.Register(ctx, store.Registration{Stream: "big", ID: "done", Namespace: "webhook", URL: "https://r.example/", NextSeq: 201})
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

// receiver is a loopback HTTP server that answers each path as told and
// remembers which message ids it acknowledged (answered 2xx), per path. It
// records the id before it writes the answer, so the set holds at least what
// any sender saw acknowledged.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	acked  map[string]map[string]int // path → message id → times acknowledged
	posts  int
	answer func(path string, n int) int // status for the n-th POST (1-based) overall
}

func newReceiver(t testing.TB, answer func(path string, n int) int) *receiver {
	rc := &receiver{acked: map[string]map[string]int{}, answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rc.mu.Lock()
		rc.posts++
		status := rc.answer(r.URL.Path, rc.posts)
		if status >= 200 && status < 300 {
			if rc.acked[r.URL.Path] == nil {
				rc.acked[r.URL.Path] = map[string]int{}
			}
			rc.acked[r.URL.Path][r.Header.Get("Message-Id")]++
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// count returns how many POSTs arrived.
func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.posts
}

// acknowledged reports whether path acknowledged message id.
func (rc *receiver) acknowledged(path, id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.acked[path][id] > 0
}

func (rc *receiver) transport() storetest.HTTPTransport {
	return storetest.HTTPTransport{Client: rc.Client()}
}
