package sqlite_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
)

// t0 is the tests' epoch: every instant is stated relative to it.
var t0 = time.Date(2026, 3, 15, 11, 0, 0, 123456789, time.UTC)

func TestDurabilityAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	rc := newReceiver(t, func(path string, _ int) int {
		switch path {
		case "/ok":
			return http.StatusOK
		case "/gone":
			return http.StatusGone
		default:
			return http.StatusServiceUnavailable
		}
	})
	appendedAt := t0.Add(-time.Minute)
	s, err := sqlite.Open(ctx, path, sqlite.WithClock(func() time.Time { return appendedAt }))
	require.NoError(t, err)

	var entries []journal.Entry
	for i := range 5 {
		entries = append(entries, journal.Entry{ID: fmt.Sprintf("urn:rec:%d", i+1), Kind: "task.update",
			Payload: []byte(fmt.Sprintf(`{"n":%d}`, i+1))})
	}
	_, err = s.Append(ctx, "task/1", entries...)
	require.NoError(t, err)
	for _, id := range []string{"ok", "gone", "flaky"} {
		_, err := s.Register(ctx, push.Registration{Stream: "task/1", ID: id, Namespace: "webhook", URL: rc.URL + "/" + id,
			Config: push.Config(`{"secret":"whsec_x"}`)})
		require.NoError(t, err)
	}
	w, err := push.NewWorker(s, s, rc.transport(), payloadProjection{}, push.WithOwner("worker-1"))
	require.NoError(t, err)
	rep, err := w.RunOnce(ctx, t0, 10)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Registrations)
	require.Equal(t, 5, rep.Deliveries, "all five records reached /ok")
	require.Equal(t, 1, rep.Parked, "/gone answered 410")
	require.Equal(t, 1, rep.Retries, "/flaky answered 503")

	type state struct {
		statuses map[string]push.Status
		evidence map[string][]push.Evidence
		records  []journal.Record
	}
	capture := func(s *sqlite.Store) state {
		st := state{statuses: map[string]push.Status{}, evidence: map[string][]push.Evidence{}}
		for _, id := range []string{"ok", "gone", "flaky"} {
			got, err := s.Get(ctx, "task/1", id)
			require.NoError(t, err)
			st.statuses[id] = got
			st.evidence[id], err = s.Evidence(ctx, "task/1", id, 0)
			require.NoError(t, err)
		}
		st.records, err = s.Read(ctx, "task/1", 1, 100)
		require.NoError(t, err)
		return st
	}
	before := capture(s)
	require.NoError(t, s.Close())

	s, err = sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Check(ctx))
	after := capture(s)
	require.Equal(t, before, after, "everything survives a close and reopen")

	require.Len(t, after.records, 5)
	for i, r := range after.records {
		require.Equal(t, entries[i].ID, r.ID)
		require.Equal(t, string(entries[i].Payload), string(r.Payload))
		requireTime(t, appendedAt, r.AppendedAt, "AppendedAt, to the nanosecond")
	}
	ok := after.statuses["ok"]
	require.Equal(t, uint64(6), ok.NextSeq, "the cursor of the delivered registration")
	require.Equal(t, push.StateIdle, ok.State())
	require.Empty(t, after.evidence["ok"], "a success leaves no evidence")
	for _, e := range entries {
		require.True(t, rc.acknowledged("/ok", e.ID), "%s was acknowledged", e.ID)
	}

	gone := after.statuses["gone"]
	require.True(t, gone.Parked)
	requireTime(t, t0, gone.ParkedAt, "ParkedAt")
	require.Equal(t, uint64(1), gone.NextSeq, "parking keeps the cursor")
	require.Len(t, after.evidence["gone"], 1)
	require.Equal(t, push.EventParked, after.evidence["gone"][0].Event)
	require.Equal(t, http.StatusGone, after.evidence["gone"][0].Status)
	require.Equal(t, "urn:rec:1", after.evidence["gone"][0].RecordID)

	flaky := after.statuses["flaky"]
	require.False(t, flaky.Parked)
	require.Equal(t, 1, flaky.Attempts)
	require.Equal(t, uint64(1), flaky.NextSeq)
	wantRetry := t0.Add(push.Backoff("task/1", "flaky", 0))
	requireTime(t, wantRetry, flaky.NextAttemptAt, "NextAttemptAt from the backoff")
	require.Len(t, after.evidence["flaky"], 1)
	ev := after.evidence["flaky"][0]
	require.Equal(t, push.EventFailed, ev.Event)
	require.Equal(t, http.StatusServiceUnavailable, ev.Status)
	require.Equal(t, "Service Unavailable", ev.Body)
	requireTime(t, wantRetry, ev.NotBefore, "evidence NotBefore")
	require.Positive(t, ev.Duration)

	// The reopened store goes on where it stopped: only /flaky is due, at its
	// retry instant, and its failures add up.
	w, err = push.NewWorker(s, s, rc.transport(), payloadProjection{}, push.WithOwner("worker-2"))
	require.NoError(t, err)
	rep, err = w.RunOnce(ctx, wantRetry.Add(-time.Nanosecond), 10)
	require.NoError(t, err)
	require.Zero(t, rep.Registrations, "nothing is due before the retry instant")
	rep, err = w.RunOnce(ctx, wantRetry, 10)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Registrations)
	require.Equal(t, 1, rep.Retries)
	flaky, err = s.Get(ctx, "task/1", "flaky")
	require.NoError(t, err)
	require.Equal(t, 2, flaky.Attempts)
}

func requireTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.Truef(t, want.Equal(got), "%s: want %v, got %v", what, want, got)
	require.Equal(t, time.UTC, got.Location(), "%s is returned in UTC", what)
}
