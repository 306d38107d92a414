package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/store/storetest"
)

// openTemp opens a new store in a fresh file under t.TempDir, closed by
// t.Cleanup.
func openTemp(t testing.TB, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return openTemp(t) })
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
	s := openTemp(t)
	_, err := s.Append(ctx, "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.Register(ctx, push.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/"})
	require.NoError(t, err)
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	require.ErrorIs(t, s.Retry(ctx, push.Claim{Stream: "s", ID: "r", Owner: "w"}, 1, far, push.Evidence{At: t0}), journal.ErrInvalid)
	require.ErrorIs(t, s.Unpark(ctx, "s", "r", far), journal.ErrInvalid)
	_, err = s.Due(ctx, push.DueQuery{At: t0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: far})
	require.ErrorIs(t, err, journal.ErrInvalid)
	st, err := s.Get(ctx, "s", "r")
	require.NoError(t, err)
	require.Zero(t, st.Attempts, "nothing changed")
	require.Empty(t, st.LeaseOwner)
}
