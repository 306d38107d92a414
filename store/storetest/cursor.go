package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

var cursorTests = []test{
	{"AdvanceIsMonotonic", testAdvanceMonotonic},
	{"RacingAdvancesNeverMoveBack", testAdvanceRace},
	{"RetryCountsAndSchedules", testRetry},
	{"ParkKeepsCursorUnparkResumes", testParkUnpark},
	{"CompleteLeavesNothingBehind", testComplete},
	{"EvidenceIsBoundedNewestFirst", testEvidence},
	{"UnknownRegistration", testUnknownRegistration},
}

func testAdvanceMonotonic(t *testing.T, b Backend) {
	appendN(t, b, "s", 10)
	register(t, b, reg("s", "r", "webhook"))
	require.NoError(t, b.Retry(ctx(t), "s", "r", 1, at(5), push.Evidence{At: at(0), Error: "503"}))
	require.Equal(t, 1, get(t, b, "s", "r").Attempts)

	require.NoError(t, b.Advance(ctx(t), "s", "r", 6))
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(6), st.NextSeq)
	require.Zero(t, st.Attempts, "an advance resets attempts")
	require.Empty(t, st.LastError)

	require.NoError(t, b.Retry(ctx(t), "s", "r", 6, at(10), push.Evidence{At: at(5), Error: "503"}))
	require.NoError(t, b.Advance(ctx(t), "s", "r", 3), "a stale advance is not an error")
	st = get(t, b, "s", "r")
	require.Equal(t, uint64(6), st.NextSeq, "a cursor never moves back")
	require.Equal(t, 1, st.Attempts, "a stale advance resets nothing")
	require.Equal(t, "503", st.LastError)
}

func testAdvanceRace(t *testing.T, b Backend) {
	appendN(t, b, "s", 200)
	register(t, b, reg("s", "r", "webhook"))
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		max uint64
	)
	errs := make(chan error, 400)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range 25 {
				n := 1 + rng.Uint64N(200)
				mu.Lock()
				max = maxU(max, n)
				mu.Unlock()
				if err := b.Advance(ctx(t), "s", "r", n); err != nil {
					errs <- err
					return
				}
				st, err := b.Get(ctx(t), "s", "r")
				if err != nil {
					errs <- err
					return
				}
				if st.NextSeq < n {
					errs <- fmt.Errorf("cursor %d is behind the advance to %d that returned", st.NextSeq, n)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, max, get(t, b, "s", "r").NextSeq, "the cursor is the largest advance")
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func testRetry(t *testing.T, b Backend) {
	appendN(t, b, "s", 5)
	register(t, b, reg("s", "r", "webhook"))
	due(t, b, "webhook", "w", at(0), 1)
	ev := push.Evidence{At: at(0), Event: push.EventFailed, Seq: 1, RecordID: "s-1", MessageID: "s-1", Attempt: 1,
		Status: 503, Body: "busy", Duration: 1500 * time.Millisecond, Error: "503 Service Unavailable", NotBefore: at(7)}
	require.NoError(t, b.Retry(ctx(t), "s", "r", 1, at(7), ev))
	st := get(t, b, "s", "r")
	require.Equal(t, 1, st.Attempts)
	requireTime(t, at(7), st.NextAttemptAt, "NextAttemptAt")
	require.Equal(t, "503 Service Unavailable", st.LastError)
	require.Empty(t, st.LeaseOwner, "a retry releases the lease")
	require.Equal(t, push.StateRetrying, st.State())
	require.Empty(t, due(t, b, "webhook", "w", at(6), 1).Registrations, "not due before NextAttemptAt")

	require.NoError(t, b.Retry(ctx(t), "s", "r", 1, at(20), push.Evidence{At: at(7), Error: "timeout"}))
	require.Equal(t, 2, get(t, b, "s", "r").Attempts, "consecutive failures at one record add up")

	require.NoError(t, b.Retry(ctx(t), "s", "r", 4, at(30), push.Evidence{At: at(20), Error: "reset"}))
	st = get(t, b, "s", "r")
	require.Equal(t, uint64(4), st.NextSeq, "progress made before the failure is kept")
	require.Equal(t, 1, st.Attempts, "a failure after progress is the first at the new record")

	evs, err := b.Evidence(ctx(t), "s", "r", 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	got := evs[2]
	require.Equal(t, "s", got.Stream)
	require.Equal(t, "r", got.Registration)
	require.Equal(t, push.EventFailed, got.Event)
	require.Equal(t, uint64(1), got.Seq)
	require.Equal(t, "s-1", got.RecordID)
	require.Equal(t, "s-1", got.MessageID)
	require.Equal(t, 1, got.Attempt)
	require.Equal(t, 503, got.Status)
	require.Equal(t, "busy", got.Body)
	require.Equal(t, 1500*time.Millisecond, got.Duration)
	require.Equal(t, "503 Service Unavailable", got.Error)
	requireTime(t, at(0), got.At, "evidence At")
	requireTime(t, at(7), got.NotBefore, "evidence NotBefore")
}

func testParkUnpark(t *testing.T, b Backend) {
	appendN(t, b, "s", 5)
	register(t, b, reg("s", "r", "webhook"))
	due(t, b, "webhook", "w", at(0), 1)
	require.NoError(t, b.Park(ctx(t), "s", "r", 3, push.Evidence{At: at(4), Event: push.EventParked, Seq: 3, Status: 410, Error: "410 Gone"}))
	st := get(t, b, "s", "r")
	require.True(t, st.Parked)
	requireTime(t, at(4), st.ParkedAt, "ParkedAt")
	require.Equal(t, uint64(3), st.NextSeq, "parking keeps the cursor, with the progress made before")
	require.Equal(t, "410 Gone", st.LastError)
	require.Empty(t, st.LeaseOwner)
	require.Equal(t, push.StateParked, st.State())
	require.Empty(t, due(t, b, "webhook", "w", at(1000), 10).Registrations, "a parked registration is never due")

	require.NoError(t, b.Unpark(ctx(t), "s", "r", at(2000)))
	st = get(t, b, "s", "r")
	require.False(t, st.Parked)
	require.True(t, st.ParkedAt.IsZero())
	require.Zero(t, st.Attempts, "unpark resets attempts")
	require.Equal(t, uint64(3), st.NextSeq, "unpark resumes at the first unacknowledged record")
	batch := due(t, b, "webhook", "w", at(2000), 10)
	require.Equal(t, []string{"s/r"}, keys(batch.Registrations), "due at once")

	require.NoError(t, b.Unpark(ctx(t), "s", "r", at(2001)), "unparking an active registration changes nothing")
	evs, err := b.Evidence(ctx(t), "s", "r", 0)
	require.NoError(t, err)
	require.Equal(t, []string{push.EventUnparked, push.EventParked}, events(evs))
	require.Equal(t, 410, evs[1].Status)
}

func testComplete(t *testing.T, b Backend) {
	final := entry("end")
	final.Final = true
	_, err := b.Append(ctx(t), "task/1", entry("start"), final)
	require.NoError(t, err)
	register(t, b, reg("task/1", "r", "a2a"))
	require.NoError(t, b.Retry(ctx(t), "task/1", "r", 1, at(1), push.Evidence{At: at(0), Error: "503"}))
	require.NoError(t, b.Complete(ctx(t), "task/1", "r"))
	_, err = b.Get(ctx(t), "task/1", "r")
	require.ErrorIs(t, err, journal.ErrNotFound, "a completed registration is gone")
	_, err = b.Evidence(ctx(t), "task/1", "r", 0)
	require.ErrorIs(t, err, journal.ErrNotFound)
	all, err := b.List(ctx(t), push.ListQuery{Stream: "task/1"})
	require.NoError(t, err)
	require.Empty(t, all)
	head, err := b.Head(ctx(t), "task/1")
	require.NoError(t, err)
	require.Equal(t, uint64(2), head, "the journal keeps its records")
}

func testEvidence(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	register(t, b, reg("s", "r", "webhook"))
	register(t, b, reg("s", "other", "webhook"))
	total := push.MaxEvidence + 20
	for i := range total {
		require.NoError(t, b.AddEvidence(ctx(t), push.Evidence{Stream: "s", Registration: "r", At: at(i),
			Event: push.EventSkipped, Seq: 1, Error: fmt.Sprintf("e%d", i), Body: strings.Repeat("x", push.MaxEvidenceBody)}))
	}
	require.NoError(t, b.AddEvidence(ctx(t), push.Evidence{Stream: "s", Registration: "other", At: at(0), Error: "mine"}))

	evs, err := b.Evidence(ctx(t), "s", "r", 0)
	require.NoError(t, err)
	require.Len(t, evs, push.MaxEvidence, "at most MaxEvidence rows per registration")
	require.Equal(t, fmt.Sprintf("e%d", total-1), evs[0].Error, "newest first")
	require.Equal(t, fmt.Sprintf("e%d", total-push.MaxEvidence), evs[len(evs)-1].Error, "the oldest rows were dropped")
	require.Len(t, evs[0].Body, push.MaxEvidenceBody)

	few, err := b.Evidence(ctx(t), "s", "r", 3)
	require.NoError(t, err)
	require.Equal(t, []string{fmt.Sprintf("e%d", total-1), fmt.Sprintf("e%d", total-2), fmt.Sprintf("e%d", total-3)},
		[]string{few[0].Error, few[1].Error, few[2].Error})

	other, err := b.Evidence(ctx(t), "s", "other", 0)
	require.NoError(t, err)
	require.Len(t, other, 1, "evidence is per registration")

	_, err = b.Evidence(ctx(t), "s", "r", -1)
	require.ErrorIs(t, err, journal.ErrInvalid)
	require.ErrorIs(t, b.AddEvidence(ctx(t), push.Evidence{Stream: "s", Registration: "nobody", At: at(0)}), journal.ErrNotFound)
}

func testUnknownRegistration(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	for name, call := range map[string]func() error{
		"Advance":    func() error { return b.Advance(ctx(t), "s", "nobody", 2) },
		"Retry":      func() error { return b.Retry(ctx(t), "s", "nobody", 1, at(1), push.Evidence{At: at(0)}) },
		"Park":       func() error { return b.Park(ctx(t), "s", "nobody", 1, push.Evidence{At: at(0)}) },
		"Unpark":     func() error { return b.Unpark(ctx(t), "s", "nobody", at(0)) },
		"Complete":   func() error { return b.Complete(ctx(t), "s", "nobody") },
		"Skip":       func() error { return b.Skip(ctx(t), "s", "nobody", 2, at(0), "poison") },
		"Rewind":     func() error { return b.Rewind(ctx(t), "s", "nobody", 1, at(0)) },
		"Unregister": func() error { return b.Unregister(ctx(t), "s", "nobody") },
		"Evidence":   func() error { _, err := b.Evidence(ctx(t), "s", "nobody", 0); return err },
	} {
		require.ErrorIs(t, call(), journal.ErrNotFound, name)
	}
	all, err := b.List(ctx(t), push.ListQuery{})
	require.NoError(t, err)
	require.Empty(t, all, "no call created a registration")
}

func events(evs []push.Evidence) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}
