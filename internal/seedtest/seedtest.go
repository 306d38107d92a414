// Package seedtest makes the SQLite databases that herald's tests share: a
// fresh one, and the one of the host views (`herald hosts`, the daemon's
// admin API). Only tests import it.
package seedtest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// Hostile is a host-level failure's text with an escape sequence and a
// line break, which a terminal must not see raw.
const Hostile = "timeout: \x1b[2J\x1b[31mowned\nsecond line"

// SQLite is a fresh SQLite store in the test's directory, closed when the
// test ends.
func SQLite(tb testing.TB) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "herald.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// DownHostDB returns the path of a SQLite database in which
// down.example:443 is down (three host-level failures, a minute apart from
// t0, each with the error Hostile) holding two registrations of stream
// "orders", and up.example:443 has one.
func DownHostDB(t testing.TB, t0 time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "herald.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Append(ctx, "orders", journal.Entry{ID: "o-1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	for _, r := range []struct{ id, url string }{{"a", "https://down.example/a"}, {"b", "https://down.example/b"}, {"c", "https://up.example/c"}} {
		_, err := s.Register(ctx, push.Registration{Stream: "orders", ID: r.id, Namespace: "webhook", URL: r.url})
		require.NoError(t, err)
	}
	for i := range 3 {
		when := t0.Add(time.Duration(i) * time.Minute)
		batch, err := s.Due(ctx, store.DueQuery{At: when, Limit: 10, Namespace: "webhook", Owner: "w", LeaseUntil: when.Add(time.Second)})
		require.NoError(t, err)
		for _, st := range batch.Registrations {
			if st.Host() != "down.example:443" {
				continue
			}
			_, err := s.HostFailed(ctx, store.HostFailure{Claim: st.Claim(), NextSeq: 1, Host: st.Host(),
				Evidence: store.Evidence{At: when, Error: Hostile}, Horizon: store.DefaultHostHorizon})
			require.NoError(t, err)
			break
		}
	}
	return path
}
