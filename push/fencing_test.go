package push_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
)

// A worker whose turn outlived its lease cannot park a registration that
// another worker delivered in full meanwhile: its write is fenced out.
func TestStaleTurnCannotPark(t *testing.T) {
	f := newFixture(t)
	f.append("s", 3)
	f.register("s", "r")
	g := newGate()
	w1 := f.workerOn(g.transport("", unavailable()), push.WithOwner("w1"), push.WithLease(2*time.Second), push.WithMaxAttempts(1))
	w2 := f.worker(push.WithOwner("w2"), push.WithLease(2*time.Second))

	done := make(chan push.SweepReport)
	go func() { rep, _ := w1.RunOnce(t.Context(), at(0), 10); done <- rep }()
	<-g.entered
	rep, err := w2.RunOnce(t.Context(), at(3), 10) // w1's lease ended at at(2)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Records)
	close(g.release)
	stale := <-done
	require.Equal(t, 1, stale.LeasesLost, "w1's write was fenced out")
	require.Zero(t, stale.Parked)

	st := f.get("s", "r")
	require.False(t, st.Parked, "a stale failure parked a healthy registration (%q)", st.LastError)
	require.Zero(t, st.Attempts)
	require.Equal(t, uint64(4), st.NextSeq)
}

// A stale turn's failure does not release the lease of the worker that took
// over, so no third worker serves the registration at the same time
// (invariant 3: N+1 is never sent before N was acknowledged).
func TestStaleTurnCannotReleaseAnotherLease(t *testing.T) {
	f := newFixture(t)
	f.append("s", 3)
	f.register("s", "r")
	g1, g2 := newGate(), newGate()
	lease := push.WithLease(2 * time.Second)
	w1 := f.workerOn(g1.transport("", unavailable()), push.WithOwner("w1"), lease)
	w2 := f.workerOn(g2.transport("s#2", accepted()), push.WithOwner("w2"), lease)
	w3 := f.worker(push.WithOwner("w3"), lease)

	d1, d2 := make(chan error), make(chan error)
	go func() { _, err := w1.RunOnce(t.Context(), at(0), 10); d1 <- err }()
	<-g1.entered
	go func() { _, err := w2.RunOnce(t.Context(), at(3), 10); d2 <- err }()
	<-g2.entered // w2 has #1 acknowledged and #2 in flight, under a lease until at(5)
	close(g1.release)
	require.NoError(t, <-d1)
	rep, err := w3.RunOnce(t.Context(), at(4), 10)
	require.NoError(t, err)
	require.Zero(t, rep.Registrations, "w2's lease is live: w3 must not get the registration")
	close(g2.release)
	require.NoError(t, <-d2)
	require.Equal(t, uint64(4), f.get("s", "r").NextSeq)
	require.Empty(t, f.recv.sent(), "w3 sent nothing")
}

// An operator's rewind made while a turn is in flight is not undone when
// the turn ends.
func TestRewindSurvivesTurnInFlight(t *testing.T) {
	f := newFixture(t)
	f.append("s", 10)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: "https://a.example/", NextSeq: 6})
	g := newGate()
	w := f.workerOn(g.transport("s#7", accepted()))
	done := make(chan push.SweepReport)
	go func() { rep, _ := w.RunOnce(t.Context(), at(0), 10); done <- rep }()
	<-g.entered
	require.NoError(t, f.store.Rewind(t.Context(), "s", "r", 1, at(1))) // the operator replays everything
	close(g.release)
	require.Equal(t, 1, (<-done).LeasesLost)
	require.Equal(t, uint64(1), f.get("s", "r").NextSeq, "the rewind stands")
}

// Under saturation, every registration gets its turn: the least recently
// claimed go first.
func TestSaturatedSweepsStarveNoOne(t *testing.T) {
	f := newFixture(t)
	f.append("s", 1)
	for _, id := range []string{"a", "b", "c"} {
		f.register("s", id)
	}
	w := f.worker(push.WithDrainPage(1))
	for i := range 50 {
		f.append("s", 1)
		_, err := w.RunOnce(t.Context(), at(i), 2)
		require.NoError(t, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		require.Greater(t, f.get("s", id).NextSeq, uint64(25), "%s was served in about two of three sweeps", id)
	}
}
