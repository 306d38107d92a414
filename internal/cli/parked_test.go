package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
)

// A parked registration is not attempted until unparked: herald status
// and herald registrations show "parked" as its next attempt, never the
// instant stored with it, while a retrying one shows its instant.
func TestParkedRowsShowNoNextAttempt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	s, err := sqlite.Open(t.Context(), db)
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	_, err = s.Append(t.Context(), "orders", journal.Entry{ID: "o-1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	for _, id := range []string{"gone", "busy"} {
		_, err = s.Register(t.Context(), push.Registration{Stream: "orders", ID: id, Namespace: "webhook", URL: "https://" + id + ".example/"})
		require.NoError(t, err)
		b, err := s.Due(t.Context(), push.DueQuery{At: t0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
		require.Len(t, b.Registrations, 1)
		c := b.Registrations[0].Claim()
		if id == "gone" {
			require.NoError(t, s.Park(t.Context(), c, 1, push.Evidence{At: t0, Event: push.EventParked, Status: 410, Error: "410 Gone"}))
		} else {
			require.NoError(t, s.Retry(t.Context(), c, 1, t0.Add(time.Hour), push.Evidence{At: t0, Event: push.EventFailed, Status: 503, NotBefore: t0.Add(time.Hour)}))
		}
	}
	require.NoError(t, s.Close())

	rowOf := func(out, id string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, " "+id+" ") {
				return line
			}
		}
		t.Fatalf("no row for %s in\n%s", id, out)
		return ""
	}
	for _, args := range [][]string{{"registrations"}, {"status"}} {
		out := heraldOK(t, db, "", args...)
		require.Contains(t, out, "NEXT ATTEMPT", args)
		gone := rowOf(out, "gone")
		require.Regexp(t, `\sparked\s+parked\s`, gone, "%v: NEXT ATTEMPT and STATE of the parked row", args)
		require.NotContains(t, gone, "2026-", "%v: no instant for a parked row: %s", args, gone)
		require.Contains(t, rowOf(out, "busy"), "2026-03-15 12:00:00Z", "%v: a retrying row shows when", args)
	}
}
