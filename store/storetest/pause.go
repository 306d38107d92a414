package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// An operator's pause and resume (store.Store.Pause, Resume).
var pauseTests = []test{testPausedIsNeverClaimedUntilResumed, testPauseIsNotAPark}

// testPausedIsNeverClaimedUntilResumed: a paused registration is never
// claimed, its live lease cleared (the turn's writes are fenced out), shown
// paused with who and why in its evidence and an event; Resume makes it due
// at its instant, at its cursor.
func testPausedIsNeverClaimedUntilResumed(t *testing.T, b Backend) {
	streamWithReg(t, b, 3)
	c := claim(t, b, "s", "r", at(0))
	require.NoError(t, b.Pause(t.Context(), "s", "r", at(1), "alice", "the receiver's deploy"))
	require.ErrorIs(t, b.Advance(t.Context(), c, 2), store.ErrLeaseLost, "a pause takes the lease from the turn in flight")
	st := get(t, b, "s", "r")
	require.True(t, st.Paused)
	require.Equal(t, store.StatePaused, st.State())
	require.Equal(t, uint64(1), st.NextSeq)
	require.Equal(t, "paused by alice: the receiver's deploy", st.LastError)
	require.Empty(t, due(t, b, "webhook", "w", at(1000), 10).Registrations, "a paused registration is never claimed")
	ev := evidence(t, b, "s", "r")[0]
	require.Equal(t, store.EventPaused, ev.Event)
	require.Equal(t, "paused by alice: the receiver's deploy", ev.Error)
	require.NoError(t, b.Pause(t.Context(), "s", "r", at(2), "bob", "again"), "pausing a paused one is no error")
	require.Len(t, evidence(t, b, "s", "r"), 1, "and changes nothing")

	require.NoError(t, b.Unpark(t.Context(), "s", "r", at(3)))
	require.True(t, get(t, b, "s", "r").Paused, "unpark leaves a pause alone: resume ends it")

	stats, err := b.Stats(t.Context(), at(3))
	require.NoError(t, err)
	require.Equal(t, 1, stats.Namespaces["webhook"].Paused)
	require.Zero(t, stats.Namespaces["webhook"].Parked, "a pause is not a park")
	require.Nil(t, stats.OldestParked)

	require.NoError(t, b.Resume(t.Context(), "s", "r", at(50), "bob"))
	st = get(t, b, "s", "r")
	require.False(t, st.Paused)
	require.False(t, st.Parked)
	require.Equal(t, at(50), st.NextAttemptAt.UTC())
	require.Empty(t, due(t, b, "webhook", "w", at(49), 10).Registrations, "due at the resume's instant, not before")
	batch := due(t, b, "webhook", "w", at(50), 10)
	require.Len(t, batch.Registrations, 1)
	require.Equal(t, uint64(1), batch.Registrations[0].NextSeq, "at its cursor")
	require.Equal(t, store.EventResumed, evidence(t, b, "s", "r")[0].Event)
	require.Equal(t, "resumed by bob", evidence(t, b, "s", "r")[0].Error)

	var kinds []string
	for _, r := range heraldEvents(t, b) {
		e := payload(t, r)
		if e.Kind == store.KindPaused {
			require.Equal(t, "alice", e.By)
			require.Equal(t, "the receiver's deploy", e.Reason)
		}
		kinds = append(kinds, e.Kind)
	}
	require.Equal(t, []string{store.KindPaused, store.KindResumed}, kinds)

	require.ErrorIs(t, b.Pause(t.Context(), "s", "nobody", at(60), "alice", ""), journal.ErrNotFound)
	require.ErrorIs(t, b.Pause(t.Context(), "s", "r", at(60), "", ""), journal.ErrInvalid, "who pauses is said")
	require.ErrorIs(t, b.Pause(t.Context(), "s", "r", at(60), "alice", "two\nlines"), journal.ErrInvalid)
	require.False(t, get(t, b, "s", "r").Paused, "a refused pause changes nothing")
}

// testPauseIsNotAPark: a failure-parked registration paused stays stopped;
// resume ends both; List's parked filter finds it.
func testPauseIsNotAPark(t *testing.T, b Backend) {
	streamWithReg(t, b, 3)
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(0)), 1, store.Evidence{At: at(0), Error: "410 Gone"}))
	require.NoError(t, b.Pause(t.Context(), "s", "r", at(5), "alice", ""))
	st := get(t, b, "s", "r")
	require.Equal(t, store.StatePaused, st.State())
	require.Equal(t, "paused by alice", st.LastError)
	require.Len(t, list(t, b, store.ListQuery{Parked: true}), 1)
	require.NoError(t, b.Resume(t.Context(), "s", "r", at(9), "alice"))
	st = get(t, b, "s", "r")
	require.False(t, st.Parked)
	require.Zero(t, st.Attempts)
	require.Len(t, due(t, b, "webhook", "w", at(9), 10).Registrations, 1)
}
