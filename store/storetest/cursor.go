package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

var cursorTests = []test{
	{"AdvanceIsMonotonic", testAdvanceMonotonic},
	{"RacingWorkersNeverMoveCursorBack", testAdvanceRace},
	{"StaleClaimsAreFencedOut", testFencing},
	{"CheckpointKeepsTheLease", testCheckpointKeepsLease},
	{"CheckpointIsFencedAndMonotonic", testCheckpointFenced},
	{"CursorOutOfRangeChangesNothing", testCursorRange},
	{"RetryCountsAndSchedules", testRetry},
	{"ParkKeepsCursorUnparkResumes", testParkUnpark},
	{"CompleteLeavesNothingBehind", testComplete},
	{"EvidenceIsBoundedNewestFirst", testEvidence},
	{"EvidenceKeepsAnyAnswer", testEvidenceBytes},
	{"UnknownRegistration", testUnknownRegistration},
}

func testAdvanceMonotonic(t *testing.T, b Backend) {
	appendN(t, b, "s", 10)
	register(t, b, reg("s", "r", "webhook"))
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(0)), 1, at(5), push.Evidence{At: at(0), Error: "503"}))
	require.Equal(t, 1, get(t, b, "s", "r").Attempts)

	require.NoError(t, b.Advance(ctx(t), claim(t, b, "s", "r", at(5)), 6))
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(6), st.NextSeq)
	require.Zero(t, st.Attempts, "an advance resets attempts")
	require.Empty(t, st.LastError)
	require.Empty(t, st.LeaseOwner, "and releases the lease")

	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(6)), 6, at(10), push.Evidence{At: at(6), Error: "503"}))
	require.NoError(t, b.Advance(ctx(t), claim(t, b, "s", "r", at(10)), 3), "an advance behind the cursor is not an error")
	st = get(t, b, "s", "r")
	require.Equal(t, uint64(6), st.NextSeq, "a cursor never moves back")
	require.Equal(t, 1, st.Attempts, "an advance that does not move the cursor resets nothing")
	require.Equal(t, "503", st.LastError)
	require.Empty(t, st.LeaseOwner, "but it releases the lease")

	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(10)), 3, at(20), push.Evidence{At: at(10), Error: "503"}))
	require.NoError(t, b.Park(ctx(t), claim(t, b, "s", "r", at(20)), 2, push.Evidence{At: at(20), Error: "410"}))
	st = get(t, b, "s", "r")
	require.Equal(t, uint64(6), st.NextSeq, "neither Retry nor Park moves a cursor back")
	require.Equal(t, 3, st.Attempts)
}

// testAdvanceRace races workers that claim and advance the same
// registration with short leases: every write is either applied (never
// moving the cursor back) or fenced out with ErrLeaseLost.
func testAdvanceRace(t *testing.T, b Backend) {
	appendN(t, b, "s", 200)
	register(t, b, reg("s", "r", "webhook"))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		maxSeen uint64
		applied int
	)
	errs := make(chan error, 400)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range 25 {
				when := at(i*10 + w)
				batch, err := b.Due(ctx(t), push.DueQuery{At: when, Limit: 1, Namespace: "webhook",
					Owner: fmt.Sprintf("w%d-%d", w, i), LeaseUntil: when.Add(time.Second)})
				if err != nil {
					errs <- err
					return
				}
				if len(batch.Registrations) == 0 {
					continue
				}
				n := 1 + rng.Uint64N(201)
				err = b.Advance(ctx(t), batch.Registrations[0].Claim(), n)
				if errors.Is(err, push.ErrLeaseLost) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				maxSeen = max(maxSeen, n)
				applied++
				mu.Unlock()
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
	require.Positive(t, applied)
	require.Equal(t, max(maxSeen, 1), get(t, b, "s", "r").NextSeq, "the cursor is the largest applied advance")
}

func testFencing(t *testing.T, b Backend) {
	appendN(t, b, "s", 10)
	register(t, b, reg("s", "r", "webhook"))
	a := due(t, b, "webhook", "A", at(0), 1).Registrations[0].Claim()
	require.Equal(t, "A", a.Owner)
	bb := due(t, b, "webhook", "B", at(60), 1).Registrations[0].Claim() // A's lease expired: B takes over

	stale := push.Evidence{At: at(61), Error: "stale"}
	require.ErrorIs(t, b.Advance(ctx(t), a, 5), push.ErrLeaseLost)
	require.ErrorIs(t, b.Retry(ctx(t), a, 1, at(100), stale), push.ErrLeaseLost)
	require.ErrorIs(t, b.Park(ctx(t), a, 1, stale), push.ErrLeaseLost)
	require.ErrorIs(t, b.Complete(ctx(t), a), push.ErrLeaseLost)
	st := get(t, b, "s", "r")
	require.Equal(t, "B", st.LeaseOwner, "a stale claim never releases the live lease")
	require.Equal(t, uint64(1), st.NextSeq)
	require.Zero(t, st.Attempts)
	require.False(t, st.Parked)
	evs, err := b.Evidence(ctx(t), "s", "r", 0)
	require.NoError(t, err)
	require.Empty(t, evs, "a fenced write stores no evidence")

	// An operator's move takes the lease away from the turn in flight.
	require.NoError(t, b.Advance(ctx(t), bb, 8))
	c := claim(t, b, "s", "r", at(70))
	require.NoError(t, b.Rewind(ctx(t), "s", "r", 2, at(71)))
	require.ErrorIs(t, b.Advance(ctx(t), c, 11), push.ErrLeaseLost, "a turn in flight cannot undo a rewind")
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq)
	c = claim(t, b, "s", "r", at(72))
	require.NoError(t, b.Skip(ctx(t), "s", "r", 4, at(73), "poison"))
	require.ErrorIs(t, b.Retry(ctx(t), c, 2, at(100), stale), push.ErrLeaseLost, "nor count a failure after a skip")
	st = get(t, b, "s", "r")
	require.Equal(t, uint64(4), st.NextSeq)
	require.Zero(t, st.Attempts)
}

// testCheckpointKeepsLease: a checkpoint saves the cursor as Advance does
// and the claim goes on: no other claim takes the registration, and the same
// claim's writes still apply.
func testCheckpointKeepsLease(t *testing.T, b Backend) {
	appendN(t, b, "s", 10)
	register(t, b, reg("s", "r", "webhook"))
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(0)), 1, at(5), push.Evidence{At: at(0), Error: "503"}))
	c := due(t, b, "webhook", "A", at(5), 1).Registrations[0].Claim()
	leased := get(t, b, "s", "r")

	require.NoError(t, b.Checkpoint(ctx(t), c, 4))
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(4), st.NextSeq)
	require.Zero(t, st.Attempts, "a checkpoint that moves the cursor resets attempts")
	require.Empty(t, st.LastError)
	require.Equal(t, "A", st.LeaseOwner, "and keeps the lease")
	requireTime(t, leased.LeaseUntil, st.LeaseUntil, "LeaseUntil")
	require.Empty(t, due(t, b, "webhook", "B", at(6), 1).Registrations, "no other claim takes it while the lease lives")

	require.NoError(t, b.Checkpoint(ctx(t), c, 7), "a claim checkpoints as often as it likes")
	require.NoError(t, b.Advance(ctx(t), c, 9), "and ends with a write of its own")
	st = get(t, b, "s", "r")
	require.Equal(t, uint64(9), st.NextSeq)
	require.Empty(t, st.LeaseOwner, "Advance released the lease")
	require.Equal(t, []string{"s/r"}, keys(due(t, b, "webhook", "C", at(7), 1).Registrations), "due again at once")
}

// testCheckpointFenced: a checkpoint applies only under the live lease, and
// never moves a cursor back.
func testCheckpointFenced(t *testing.T, b Backend) {
	appendN(t, b, "s", 10)
	register(t, b, reg("s", "r", "webhook"))
	a := due(t, b, "webhook", "A", at(0), 1).Registrations[0].Claim()
	require.NoError(t, b.Checkpoint(ctx(t), a, 3))
	bb := due(t, b, "webhook", "B", at(60), 1).Registrations[0].Claim() // A's lease expired: B takes over
	require.ErrorIs(t, b.Checkpoint(ctx(t), a, 8), push.ErrLeaseLost)
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(3), st.NextSeq, "a stale checkpoint changes nothing")
	require.Equal(t, "B", st.LeaseOwner)

	require.NoError(t, b.Retry(ctx(t), bb, 5, at(61), push.Evidence{At: at(60), Error: "503"}))
	c := claim(t, b, "s", "r", at(61))
	require.NoError(t, b.Checkpoint(ctx(t), c, 2), "a checkpoint behind the cursor is not an error")
	st = get(t, b, "s", "r")
	require.Equal(t, uint64(5), st.NextSeq, "a checkpoint never moves a cursor back")
	require.Equal(t, 1, st.Attempts, "nor resets what it did not move past")
	require.Equal(t, "503", st.LastError)
	require.Equal(t, c.Owner, st.LeaseOwner)
	for _, n := range []uint64{0, 12, 1 << 62} {
		require.ErrorIs(t, b.Checkpoint(ctx(t), c, n), journal.ErrInvalid, "checkpoint at %d with head 10", n)
	}
	require.ErrorIs(t, b.Checkpoint(ctx(t), push.Claim{Stream: "s", ID: "r"}, 6), journal.ErrInvalid, "no owner")
	require.Equal(t, uint64(5), get(t, b, "s", "r").NextSeq, "nothing changed")

	require.NoError(t, b.Rewind(ctx(t), "s", "r", 2, at(62)))
	require.ErrorIs(t, b.Checkpoint(ctx(t), c, 6), push.ErrLeaseLost, "a turn in flight cannot undo a rewind")
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq)
}

func testCursorRange(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	register(t, b, reg("s", "r", "webhook"))
	c := claim(t, b, "s", "r", at(0))
	for _, n := range []uint64{0, 5, 1 << 62} {
		require.ErrorIs(t, b.Advance(ctx(t), c, n), journal.ErrInvalid, "advance to %d with head 3", n)
		require.ErrorIs(t, b.Retry(ctx(t), c, n, at(9), push.Evidence{At: at(0)}), journal.ErrInvalid, "retry at %d", n)
		require.ErrorIs(t, b.Park(ctx(t), c, n, push.Evidence{At: at(0)}), journal.ErrInvalid, "park at %d", n)
	}
	require.ErrorIs(t, b.Retry(ctx(t), c, 1, time.Time{}, push.Evidence{At: at(0)}), journal.ErrInvalid, "zero notBefore")
	require.ErrorIs(t, b.Retry(ctx(t), c, 1, at(9), push.Evidence{}), journal.ErrInvalid, "zero evidence instant")
	require.ErrorIs(t, b.Park(ctx(t), c, 1, push.Evidence{}), journal.ErrInvalid, "zero evidence instant")
	require.ErrorIs(t, b.Advance(ctx(t), push.Claim{Stream: "s", ID: "r"}, 2), journal.ErrInvalid, "no owner")
	require.ErrorIs(t, b.Unpark(ctx(t), "s", "r", time.Time{}), journal.ErrInvalid)
	require.ErrorIs(t, b.Skip(ctx(t), "s", "r", 2, time.Time{}, "x"), journal.ErrInvalid)
	require.ErrorIs(t, b.Rewind(ctx(t), "s", "r", 1, time.Time{}), journal.ErrInvalid)
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(1), st.NextSeq, "nothing changed")
	require.Zero(t, st.Attempts)
	require.Equal(t, c.Owner, st.LeaseOwner, "the lease is still held")
	require.NoError(t, b.Advance(ctx(t), c, 4), "one past the head is the end of the stream")

	past := reg("s", "past", "webhook")
	past.NextSeq = 5
	_, err := b.Register(ctx(t), past)
	require.ErrorIs(t, err, journal.ErrInvalid, "a new cursor past head+1 would skip records unseen")
}

func testRetry(t *testing.T, b Backend) {
	appendN(t, b, "s", 5)
	register(t, b, reg("s", "r", "webhook"))
	ev := push.Evidence{At: at(0), Event: push.EventFailed, Seq: 1, RecordID: "s-1", MessageID: "s-1", Attempt: 1,
		Status: 503, Body: "busy", Duration: 1500 * time.Millisecond, Error: "503 Service Unavailable", NotBefore: at(7),
		Location: "https://elsewhere.example/"}
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(0)), 1, at(7), ev))
	st := get(t, b, "s", "r")
	require.Equal(t, 1, st.Attempts)
	requireTime(t, at(7), st.NextAttemptAt, "NextAttemptAt")
	require.Equal(t, "503 Service Unavailable", st.LastError)
	require.Empty(t, st.LeaseOwner, "a retry releases the lease")
	require.Equal(t, push.StateRetrying, st.State())
	require.Empty(t, due(t, b, "webhook", "w", at(6), 1).Registrations, "not due before NextAttemptAt")

	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(7)), 1, at(20), push.Evidence{At: at(7), Error: "timeout"}))
	require.Equal(t, 2, get(t, b, "s", "r").Attempts, "consecutive failures at one record add up")

	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(20)), 4, at(30), push.Evidence{At: at(20), Error: "reset"}))
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
	require.Equal(t, "https://elsewhere.example/", got.Location)
	require.Equal(t, 1500*time.Millisecond, got.Duration)
	require.Equal(t, "503 Service Unavailable", got.Error)
	requireTime(t, at(0), got.At, "evidence At")
	requireTime(t, at(7), got.NotBefore, "evidence NotBefore")
}

func testParkUnpark(t *testing.T, b Backend) {
	appendN(t, b, "s", 5)
	register(t, b, reg("s", "r", "webhook"))
	require.NoError(t, b.Park(ctx(t), claim(t, b, "s", "r", at(0)), 3, push.Evidence{At: at(4), Event: push.EventParked, Seq: 3, Status: 410, Error: "410 Gone"}))
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
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "task/1", "r", at(0)), 1, at(1), push.Evidence{At: at(0), Error: "503"}))
	stale := claim(t, b, "task/1", "r", at(1))
	c := claim(t, b, "task/1", "r", at(1+60))
	require.ErrorIs(t, b.Complete(ctx(t), stale), push.ErrLeaseLost)
	require.NoError(t, b.Complete(ctx(t), c))
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
	nobody := push.Claim{Stream: "s", ID: "nobody", Owner: "w"}
	for name, call := range map[string]func() error{
		"Advance":    func() error { return b.Advance(ctx(t), nobody, 2) },
		"Checkpoint": func() error { return b.Checkpoint(ctx(t), nobody, 2) },
		"Retry":      func() error { return b.Retry(ctx(t), nobody, 1, at(1), push.Evidence{At: at(0)}) },
		"Park":       func() error { return b.Park(ctx(t), nobody, 1, push.Evidence{At: at(0)}) },
		"Unpark":     func() error { return b.Unpark(ctx(t), "s", "nobody", at(0)) },
		"Complete":   func() error { return b.Complete(ctx(t), nobody) },
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

// testEvidenceBytes: a receiver chooses these bytes. A store that could not
// keep them would fail Retry; the worker would count no attempt, and the
// registration would be retried every lease and never parked.
func testEvidenceBytes(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	register(t, b, reg("s", "r", "webhook"))
	ev := push.Evidence{At: at(0), Status: 500, Body: "a\x00b\xff\xfe" + strings.Repeat("é", 400), Location: "/\x00", Error: "500 \xff"}
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(0)), 1, at(5), ev))
	require.Equal(t, 1, get(t, b, "s", "r").Attempts)
	evs, err := b.Evidence(ctx(t), "s", "r", 0)
	require.NoError(t, err)
	require.Equal(t, ev.Clean().Body, evs[0].Body, "stored as Evidence.Clean makes it")
	require.Equal(t, ev.Clean().Error, evs[0].Error)
	require.LessOrEqual(t, len(evs[0].Body), push.MaxEvidenceBody)
	require.True(t, utf8.ValidString(evs[0].Body))
}
