package storetest

import (
	"context"
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
	"github.com/heraldpush/herald/store"
)

// A worker's writes under its claim (one at a time, or in a batch), an
// operator's (skip, rewind), and the evidence they leave.
var cursorTests = []test{
	testAdvanceIsMonotonic, testRacingWorkersNeverMoveCursorBack, testStaleClaimsAreFencedOut,
	testCheckpointKeepsTheLease, testCheckpointIsFencedAndMonotonic, testCursorOutOfRangeChangesNothing,
	testRetryCountsAndSchedules, testParkKeepsCursorUnparkResumes, testCompleteLeavesNothingBehind,
	testEvidenceIsBoundedNewestFirst, testEvidenceKeepsAnyAnswer, testUnknownRegistration,
	testSkipMovesPastPoison, testRewindReplays, testOperatorMovesAreDueAtOnce,
}

// regIs checks registration stream/id's cursor, attempts and lease owner.
func regIs(t *testing.T, b Backend, stream, id string, next uint64, attempts int, owner, why string) store.Status {
	t.Helper()
	st := get(t, b, stream, id)
	require.Equal(t, next, st.NextSeq, "%s: the cursor", why)
	require.Equal(t, attempts, st.Attempts, "%s: the attempts", why)
	require.Equal(t, owner, st.LeaseOwner, "%s: the lease owner", why)
	return st
}

// fail503 is the evidence of a transient failure at when.
func fail503(when time.Time) store.Evidence { return store.Evidence{At: when, Error: "503"} }

func testAdvanceIsMonotonic(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 1, at(5), fail503(at(0))))
	require.Equal(t, 1, get(t, b, "s", "r").Attempts)

	require.NoError(t, b.Advance(t.Context(), claim(t, b, "s", "r", at(5)), 6))
	st := regIs(t, b, "s", "r", 6, 0, "", "an advance resets attempts and releases the lease")
	require.Empty(t, st.LastError)

	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(6)), 6, at(10), fail503(at(6))))
	require.NoError(t, b.Advance(t.Context(), claim(t, b, "s", "r", at(10)), 3), "an advance behind the cursor is not an error")
	st = regIs(t, b, "s", "r", 6, 1, "", "a cursor never moves back; an advance that does not move it resets nothing, but releases the lease")
	require.Equal(t, "503", st.LastError)

	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(10)), 3, at(20), fail503(at(10))))
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(20)), 2, store.Evidence{At: at(20), Error: "410"}))
	regIs(t, b, "s", "r", 6, 3, "", "neither Retry nor Park moves a cursor back")
}

// testRacingWorkersNeverMoveCursorBack also checks that an Advance that
// returned is seen by Get.
func testRacingWorkersNeverMoveCursorBack(t *testing.T, b Backend) {
	streamWithReg(t, b, 200)
	raceSaves(t, b, 8, 25, 1, 42, func(ctx context.Context, saves []store.CursorSave) ([]error, error) {
		errs := make([]error, len(saves))
		for i, sv := range saves {
			if errs[i] = b.Advance(ctx, sv.Claim, sv.NextSeq); errs[i] != nil {
				continue
			}
			st, err := b.Get(ctx, sv.Claim.Stream, sv.Claim.ID)
			if err == nil && st.NextSeq < sv.NextSeq {
				err = fmt.Errorf("cursor %d is behind the advance to %d that returned", st.NextSeq, sv.NextSeq)
			}
			if err != nil {
				return nil, err
			}
		}
		return errs, nil
	})
}

// raceSaves races workers that each claim, rounds times, up to limit due
// registrations of stream s under one-second leases at staggered instants,
// and save random cursors for them, in random order, through save (seeded
// by seed): every save applies (never moving a cursor back) or is fenced out
// with ErrLeaseLost, none deadlocks, and each cursor ends at the largest
// applied save.
func raceSaves(t *testing.T, b Backend, workers, rounds, limit int, seed uint64, save func(context.Context, []store.CursorSave) ([]error, error)) {
	var (
		mu      sync.Mutex
		maxSeen = map[string]uint64{}
	)
	race(t, workers, func(w int) error {
		rng := rand.New(rand.NewPCG(uint64(w), seed))
		for i := range rounds {
			when := at(i*10 + w)
			batch, err := b.Due(t.Context(), store.DueQuery{At: when, Limit: limit, Namespace: "webhook",
				Owner: fmt.Sprintf("w%d-%d", w, i), LeaseUntil: when.Add(time.Second)})
			if err != nil {
				return err
			}
			saves := mapped(batch.Registrations, func(st store.Status) store.CursorSave {
				return store.CursorSave{Claim: st.Claim(), NextSeq: 1 + rng.Uint64N(201)}
			})
			rng.Shuffle(len(saves), func(a, c int) { saves[a], saves[c] = saves[c], saves[a] })
			errs, err := save(t.Context(), saves)
			for j, e := range errs {
				if err == nil && !errors.Is(e, store.ErrLeaseLost) {
					err = e
				}
				if e == nil {
					mu.Lock()
					maxSeen[saves[j].Claim.ID] = max(maxSeen[saves[j].Claim.ID], saves[j].NextSeq)
					mu.Unlock()
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	require.NotEmpty(t, maxSeen, "some save applied")
	for id, n := range maxSeen {
		require.Equal(t, n, get(t, b, "s", id).NextSeq, "%s: the cursor is the largest applied save", id)
	}
}

func testStaleClaimsAreFencedOut(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	a := due(t, b, "webhook", "A", at(0), 1).Registrations[0].Claim()
	require.Equal(t, "A", a.Owner)
	bb := due(t, b, "webhook", "B", at(60), 1).Registrations[0].Claim() // A's lease expired
	stale := store.Evidence{At: at(61), Error: "stale"}
	require.ErrorIs(t, b.Advance(t.Context(), a, 5), store.ErrLeaseLost)
	require.ErrorIs(t, b.Retry(t.Context(), a, 1, at(100), stale), store.ErrLeaseLost)
	require.ErrorIs(t, b.Park(t.Context(), a, 1, stale), store.ErrLeaseLost)
	require.ErrorIs(t, b.Complete(t.Context(), a), store.ErrLeaseLost)
	require.ErrorIs(t, errOf(b.HostFailed(t.Context(), store.HostFailure{Claim: a, NextSeq: 1, Host: "receiver.example:443", Evidence: stale, Horizon: horizon})),
		store.ErrLeaseLost)
	require.ErrorIs(t, b.Park(t.Context(), store.Claim{Stream: "s", ID: "nobody", Owner: "B"}, 1, stale), journal.ErrNotFound)
	require.False(t, regIs(t, b, "s", "r", 1, 0, "B", "a stale claim never releases the live lease").Parked)
	require.Empty(t, evidence(t, b, "s", "r"), "a fenced write stores no evidence")
	require.Empty(t, hosts(t, b, store.HostQuery{}), "a fenced host failure counts nothing against the host")
	require.Empty(t, heraldEvents(t, b), "a change that did not happen is not told")

	// An operator's move takes the lease away from the turn in flight.
	require.NoError(t, b.Advance(t.Context(), bb, 8))
	c := claim(t, b, "s", "r", at(70))
	require.NoError(t, b.Rewind(t.Context(), "s", "r", 2, at(71)))
	require.ErrorIs(t, b.Advance(t.Context(), c, 11), store.ErrLeaseLost, "a turn in flight cannot undo a rewind")
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq)
	c = claim(t, b, "s", "r", at(72))
	require.NoError(t, b.Skip(t.Context(), "s", "r", 4, at(73), "poison"))
	require.ErrorIs(t, b.Retry(t.Context(), c, 2, at(100), stale), store.ErrLeaseLost, "nor count a failure after a skip")
	regIs(t, b, "s", "r", 4, 0, "", "the skip")
}

// testCheckpointKeepsTheLease: a checkpoint saves the cursor as Advance does
// and the claim goes on: no other claim takes the registration, and the same
// claim's writes still apply.
func testCheckpointKeepsTheLease(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 1, at(5), fail503(at(0))))
	c := due(t, b, "webhook", "A", at(5), 1).Registrations[0].Claim()
	leased := get(t, b, "s", "r")

	require.NoError(t, b.Checkpoint(t.Context(), c, 4))
	st := regIs(t, b, "s", "r", 4, 0, "A", "a checkpoint that moves the cursor resets attempts, and keeps the lease")
	require.Empty(t, st.LastError)
	requireTime(t, leased.LeaseUntil, st.LeaseUntil, "LeaseUntil")
	require.Empty(t, due(t, b, "webhook", "B", at(6), 1).Registrations, "no other claim takes it while the lease lives")

	require.NoError(t, b.Checkpoint(t.Context(), c, 7), "a claim checkpoints as often as it likes")
	require.NoError(t, b.Advance(t.Context(), c, 9), "and ends with a write of its own")
	regIs(t, b, "s", "r", 9, 0, "", "Advance released the lease")
	require.Equal(t, []string{"s/r"}, keys(due(t, b, "webhook", "C", at(7), 1).Registrations), "due again at once")
}

// testCheckpointIsFencedAndMonotonic: a checkpoint applies only under the
// live lease, and never moves a cursor back.
func testCheckpointIsFencedAndMonotonic(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	a := due(t, b, "webhook", "A", at(0), 1).Registrations[0].Claim()
	require.NoError(t, b.Checkpoint(t.Context(), a, 3))
	bb := due(t, b, "webhook", "B", at(60), 1).Registrations[0].Claim() // A's lease expired: B takes over
	require.ErrorIs(t, b.Checkpoint(t.Context(), a, 8), store.ErrLeaseLost)
	regIs(t, b, "s", "r", 3, 0, "B", "a stale checkpoint changes nothing")

	require.NoError(t, b.Retry(t.Context(), bb, 5, at(61), fail503(at(60))))
	c := claim(t, b, "s", "r", at(61))
	require.NoError(t, b.Checkpoint(t.Context(), c, 2), "a checkpoint behind the cursor is not an error")
	st := regIs(t, b, "s", "r", 5, 1, c.Owner, "a checkpoint never moves a cursor back, nor resets what it did not move past")
	require.Equal(t, "503", st.LastError)
	for _, n := range []uint64{0, 12, 1 << 62} {
		require.ErrorIs(t, b.Checkpoint(t.Context(), c, n), journal.ErrInvalid, "checkpoint at %d with head 10", n)
	}
	require.ErrorIs(t, b.Checkpoint(t.Context(), store.Claim{Stream: "s", ID: "r"}, 6), journal.ErrInvalid, "no owner")
	require.Equal(t, uint64(5), get(t, b, "s", "r").NextSeq, "nothing changed")

	require.NoError(t, b.Rewind(t.Context(), "s", "r", 2, at(62)))
	require.ErrorIs(t, b.Checkpoint(t.Context(), c, 6), store.ErrLeaseLost, "a turn in flight cannot undo a rewind")
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq)
}

func testCursorOutOfRangeChangesNothing(t *testing.T, b Backend) {
	streamWithReg(t, b, 3)
	c := claim(t, b, "s", "r", at(0))
	for _, n := range []uint64{0, 5, 1 << 62} {
		require.ErrorIs(t, b.Advance(t.Context(), c, n), journal.ErrInvalid, "advance to %d with head 3", n)
		require.ErrorIs(t, b.Retry(t.Context(), c, n, at(9), store.Evidence{At: at(0)}), journal.ErrInvalid, "retry at %d", n)
		require.ErrorIs(t, b.Park(t.Context(), c, n, store.Evidence{At: at(0)}), journal.ErrInvalid, "park at %d", n)
	}
	require.ErrorIs(t, b.Retry(t.Context(), c, 1, time.Time{}, store.Evidence{At: at(0)}), journal.ErrInvalid, "zero notBefore")
	require.ErrorIs(t, b.Retry(t.Context(), c, 1, at(9), store.Evidence{}), journal.ErrInvalid, "zero evidence instant")
	require.ErrorIs(t, b.Park(t.Context(), c, 1, store.Evidence{}), journal.ErrInvalid, "zero evidence instant")
	require.ErrorIs(t, b.Advance(t.Context(), store.Claim{Stream: "s", ID: "r"}, 2), journal.ErrInvalid, "no owner")
	require.ErrorIs(t, b.Unpark(t.Context(), "s", "r", time.Time{}), journal.ErrInvalid)
	require.ErrorIs(t, b.Skip(t.Context(), "s", "r", 2, time.Time{}, "x"), journal.ErrInvalid)
	require.ErrorIs(t, b.Rewind(t.Context(), "s", "r", 1, time.Time{}), journal.ErrInvalid)
	regIs(t, b, "s", "r", 1, 0, c.Owner, "nothing changed, the lease is still held")
	require.NoError(t, b.Advance(t.Context(), c, 4), "one past the head is the end of the stream")

	require.ErrorIs(t, errOf(b.Register(t.Context(), regFrom("s", "past", "webhook", 5))), journal.ErrInvalid, "a new cursor past head+1 would skip records unseen")
}

func testRetryCountsAndSchedules(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	ev := store.Evidence{At: at(0), Event: store.EventFailed, Seq: 1, RecordID: "s-1", MessageID: "s-1", Attempt: 1,
		Status: 503, Body: "busy", Duration: 1500 * time.Millisecond, Error: "503 Service Unavailable", NotBefore: at(7),
		Location: "https://elsewhere.example/"}
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 1, at(7), ev))
	st := regIs(t, b, "s", "r", 1, 1, "", "a retry releases the lease")
	requireTime(t, at(7), st.NextAttemptAt, "NextAttemptAt")
	require.Equal(t, "503 Service Unavailable", st.LastError)
	require.Equal(t, store.StateRetrying, st.State())
	require.Empty(t, due(t, b, "webhook", "w", at(6), 1).Registrations, "not due before NextAttemptAt")

	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(7)), 1, at(20), store.Evidence{At: at(7), Error: "timeout"}))
	require.Equal(t, 2, get(t, b, "s", "r").Attempts, "consecutive failures at one record add up")

	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(20)), 4, at(30), store.Evidence{At: at(20), Error: "reset"}))
	regIs(t, b, "s", "r", 4, 1, "", "progress made before the failure is kept; a failure after it is the first at the new record")

	evs := evidence(t, b, "s", "r")
	require.Len(t, evs, 3)
	got, want := evs[2], ev
	requireTime(t, at(0), got.At, "evidence At")
	requireTime(t, at(7), got.NotBefore, "evidence NotBefore")
	want.Stream, want.Registration = "s", "r"
	want.At, want.NotBefore, got.At, got.NotBefore = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	require.Equal(t, want, got, "every field of the evidence is kept")
}

func testParkKeepsCursorUnparkResumes(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Unpark(t.Context(), "s", "r", at(0)))
	require.Empty(t, heraldEvents(t, b), "unparking one that is not parked changes nothing, tells nothing")
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(0)), 3, store.Evidence{At: at(4), Event: store.EventParked, Seq: 3, Status: 410, Error: "410 Gone"}))
	st := regIs(t, b, "s", "r", 3, 1, "", "parking keeps the cursor, with the progress made before")
	require.True(t, st.Parked)
	requireTime(t, at(4), st.ParkedAt, "ParkedAt")
	require.Equal(t, "410 Gone", st.LastError)
	require.Equal(t, store.StateParked, st.State())
	require.Empty(t, due(t, b, "webhook", "w", at(1000), 10).Registrations, "a parked registration is never due")

	require.NoError(t, b.Unpark(t.Context(), "s", "r", at(2000)))
	st = regIs(t, b, "s", "r", 3, 0, "", "unpark resets attempts, resumes at the first unacknowledged record")
	require.False(t, st.Parked)
	require.True(t, st.ParkedAt.IsZero())
	require.Equal(t, []string{"s/r"}, keys(due(t, b, "webhook", "w", at(2000), 10).Registrations), "due at once")

	require.NoError(t, b.Unpark(t.Context(), "s", "r", at(2001)), "unparking an active registration changes nothing")
	evs := evidence(t, b, "s", "r")
	require.Equal(t, []string{store.EventUnparked, store.EventParked}, events(evs))
	require.Equal(t, 410, evs[1].Status)
	recs := heraldEvents(t, b)
	require.Equal(t, []string{store.KindParked, store.KindUnparked}, eventKinds(recs), "one event a change")
	require.Equal(t, store.OperationalEvent{Kind: store.KindUnparked, Stream: "s", Registration: "r", Namespace: "webhook",
		Host: "receiver.example:443", Cursor: 3, At: at(2000)}, payload(t, recs[1]), "resumes at its cursor, at the operator's instant")
}

func testCompleteLeavesNothingBehind(t *testing.T, b Backend) {
	appendSealed(t, b, "task/1")
	register(t, b, reg("task/1", "r", "a2a"))
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "task/1", "r", at(0)), 1, at(1), fail503(at(0))))
	stale := claim(t, b, "task/1", "r", at(1))
	c := claim(t, b, "task/1", "r", at(1+60))
	require.ErrorIs(t, b.Complete(t.Context(), stale), store.ErrLeaseLost)
	require.NoError(t, b.Complete(t.Context(), c))
	require.ErrorIs(t, errOf(b.Get(t.Context(), "task/1", "r")), journal.ErrNotFound, "a completed registration is gone")
	require.ErrorIs(t, errOf(b.Evidence(t.Context(), "task/1", "r", 0)), journal.ErrNotFound)
	require.Empty(t, list(t, b, store.ListQuery{Stream: "task/1"}))
	require.Equal(t, uint64(2), head(t, b, "task/1"), "the journal keeps its records")

	recs := heraldEvents(t, b)
	require.Equal(t, []string{store.KindCompleted}, eventKinds(recs))
	require.Equal(t, store.OperationalEvent{Kind: store.KindCompleted, Stream: "task/1", Registration: "r", Namespace: "a2a",
		Host: "receiver.example:443", Cursor: 3, At: at(61)}, payload(t, recs[0]), "one past the final record, at the instant of the claim whose turn completed it")
}

func testEvidenceIsBoundedNewestFirst(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	register(t, b, reg("s", "other", "webhook"))
	total := store.MaxEvidence + 20
	for i := range total {
		require.NoError(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "s", Registration: "r", At: at(i),
			Event: store.EventSkipped, Seq: 1, Error: fmt.Sprintf("e%d", i), Body: strings.Repeat("x", store.MaxEvidenceBody)}))
	}
	require.NoError(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "s", Registration: "other", At: at(0), Error: "mine"}))

	evs := evidence(t, b, "s", "r")
	require.Len(t, evs, store.MaxEvidence, "at most MaxEvidence rows per registration")
	require.Equal(t, fmt.Sprintf("e%d", total-1), evs[0].Error, "newest first")
	require.Equal(t, fmt.Sprintf("e%d", total-store.MaxEvidence), evs[len(evs)-1].Error, "the oldest rows were dropped")
	require.Len(t, evs[0].Body, store.MaxEvidenceBody)

	few, err := b.Evidence(t.Context(), "s", "r", 3)
	require.NoError(t, err)
	require.Equal(t, []string{fmt.Sprintf("e%d", total-1), fmt.Sprintf("e%d", total-2), fmt.Sprintf("e%d", total-3)},
		[]string{few[0].Error, few[1].Error, few[2].Error})
	require.Len(t, evidence(t, b, "s", "other"), 1, "evidence is per registration")
	require.ErrorIs(t, errOf(b.Evidence(t.Context(), "s", "r", -1)), journal.ErrInvalid)
	require.ErrorIs(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "s", Registration: "nobody", At: at(0)}), journal.ErrNotFound)
}

// testEvidenceKeepsAnyAnswer: a receiver chooses these bytes. A store that
// could not keep them would fail Retry; the worker would count no attempt,
// and the registration would be retried every lease and never parked.
func testEvidenceKeepsAnyAnswer(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	ev := store.Evidence{At: at(0), Status: 500, Body: "a\x00b\xff\xfe" + strings.Repeat("é", 400), Location: "/\x00", Error: "500 \xff"}
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 1, at(5), ev))
	require.Equal(t, 1, get(t, b, "s", "r").Attempts)
	evs := evidence(t, b, "s", "r")
	require.Equal(t, ev.Clean().Body, evs[0].Body, "stored as Evidence.Clean makes it")
	require.Equal(t, ev.Clean().Error, evs[0].Error)
	require.LessOrEqual(t, len(evs[0].Body), store.MaxEvidenceBody)
	require.True(t, utf8.ValidString(evs[0].Body))
}

func testUnknownRegistration(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	nobody := store.Claim{Stream: "s", ID: "nobody", Owner: "w"}
	for name, err := range map[string]error{
		"Advance":    b.Advance(t.Context(), nobody, 2),
		"Checkpoint": b.Checkpoint(t.Context(), nobody, 2),
		"Retry":      b.Retry(t.Context(), nobody, 1, at(1), store.Evidence{At: at(0)}),
		"Park":       b.Park(t.Context(), nobody, 1, store.Evidence{At: at(0)}),
		"Unpark":     b.Unpark(t.Context(), "s", "nobody", at(0)),
		"Complete":   b.Complete(t.Context(), nobody),
		"Skip":       b.Skip(t.Context(), "s", "nobody", 2, at(0), "poison"),
		"Rewind":     b.Rewind(t.Context(), "s", "nobody", 1, at(0)),
		"Unregister": b.Unregister(t.Context(), "s", "nobody"),
		"Evidence":   errOf(b.Evidence(t.Context(), "s", "nobody", 0)),
	} {
		require.ErrorIs(t, err, journal.ErrNotFound, name)
	}
	require.Empty(t, list(t, b, store.ListQuery{}), "no call created a registration")
}

func events(evs []store.Evidence) []string {
	return mapped(evs, func(e store.Evidence) string { return e.Event })
}

// advanceBatchTests run against stores that are store.AdvanceBatchers only
// (Run leaves the group out for the others).
var advanceBatchTests = []test{
	testEachSaveAsAdvanceAlone, testRacingBatchesNeverMoveCursorsBack,
}

func batcher(t *testing.T, b Backend) store.AdvanceBatcher {
	t.Helper()
	ab, ok := b.(store.AdvanceBatcher)
	if !ok {
		t.Fatal("Run runs the AdvanceBatch group only for a store.AdvanceBatcher")
	}
	return ab
}

// testEachSaveAsAdvanceAlone mixes, in one batch, every answer Advance can
// give: each save applies or fails exactly as it would alone.
func testEachSaveAsAdvanceAlone(t *testing.T, b Backend) {
	ab := batcher(t, b)
	appendN(t, b, "s", 10)
	appendN(t, b, "t", 3)
	for _, id := range []string{"moves", "stale", "past", "behind", "attempts"} {
		register(t, b, reg("s", id, id)) // a namespace each: a claim takes one alone
	}
	register(t, b, reg("t", "end", "end"))

	moves := claim(t, b, "s", "moves", at(0))
	stale := claim(t, b, "s", "stale", at(0))
	live := claim(t, b, "s", "stale", at(61)) // stale's lease expired: another worker took it
	past := claim(t, b, "s", "past", at(0))
	require.NoError(t, b.Advance(t.Context(), claim(t, b, "s", "behind", at(0)), 6))
	behind := claim(t, b, "s", "behind", at(1))
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "attempts", at(0)), 2, at(5), store.Evidence{At: at(0), Error: "503"}))
	attempts := claim(t, b, "s", "attempts", at(5))
	end := claim(t, b, "t", "end", at(0))

	type row struct {
		save  store.CursorSave
		want  error  // nil: applied
		next  uint64 // the cursor after the batch (0: not stored)
		owner string // and its lease owner
		why   string
	}
	cases := []row{
		{store.CursorSave{Claim: moves, NextSeq: 5}, nil, 5, "", "moves, and the lease is released"},
		{store.CursorSave{Claim: stale, NextSeq: 9}, store.ErrLeaseLost, 1, live.Owner, "a stale claim changes nothing and leaves the live lease"},
		{store.CursorSave{Claim: past, NextSeq: 12}, journal.ErrInvalid, 1, past.Owner, "a cursor above head+1 changes nothing; the lease is still held"},
		{store.CursorSave{Claim: behind, NextSeq: 3}, nil, 6, "", "an advance behind the cursor is not an error, and never moves it back"},
		{store.CursorSave{Claim: store.Claim{Stream: "s", ID: "nobody", Owner: "x"}, NextSeq: 2}, journal.ErrNotFound, 0, "", "nobody"},
		{store.CursorSave{Claim: store.Claim{Stream: "s", ID: "moves"}, NextSeq: 2}, journal.ErrInvalid, 5, "", "no owner"},
		{store.CursorSave{Claim: attempts, NextSeq: 3}, nil, 3, "", "a save that moves the cursor resets attempts"},
		{store.CursorSave{Claim: end, NextSeq: 4}, nil, 4, "", "to the end of the stream"},
		{store.CursorSave{Claim: past, NextSeq: 0}, journal.ErrInvalid, 1, past.Owner, "cursor 0"},
	}
	errs, err := ab.AdvanceBatch(t.Context(), mapped(cases, func(c row) store.CursorSave { return c.save }))
	require.NoError(t, err)
	require.Len(t, errs, len(cases))
	for i, c := range cases {
		require.ErrorIs(t, errs[i], c.want, c.why)
		if c.next > 0 {
			regIs(t, b, c.save.Claim.Stream, c.save.Claim.ID, c.next, 0, c.owner, c.why)
		}
	}
	require.Empty(t, get(t, b, "s", "attempts").LastError)

	errs, err = ab.AdvanceBatch(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, errs, "an empty batch")

	// The same registration twice (a turn fenced out beside the live one).
	c := claim(t, b, "s", "moves", at(100))
	errs, err = ab.AdvanceBatch(t.Context(), []store.CursorSave{{Claim: stale, NextSeq: 10}, {Claim: live, NextSeq: 7}, {Claim: c, NextSeq: 8}})
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], store.ErrLeaseLost)
	require.NoError(t, errs[1])
	require.NoError(t, errs[2])
	require.Equal(t, uint64(7), get(t, b, "s", "stale").NextSeq)
	require.Equal(t, uint64(8), get(t, b, "s", "moves").NextSeq)
}

func testRacingBatchesNeverMoveCursorsBack(t *testing.T, b Backend) {
	ab := batcher(t, b)
	streamWithRegs(t, b, 200, 12)
	raceSaves(t, b, 6, 15, 6, 7, ab.AdvanceBatch)
}

// A worker's turn over the store: what Checkpoint is for.
var turnTests = []test{
	testPagesShareOneClaim, testFailureOnALaterPage,
}

// pageSetup appends n records to stream, registers stream/r with window w,
// and returns a worker with drain pages of 3, delivering to rc, that counts
// the registrations its claims took.
func pageSetup(t *testing.T, b Backend, stream string, n, window int, rc *receiver, claimed *int) *push.Worker {
	appendN(t, b, stream, n)
	r := reg(stream, "r", "webhook")
	r.Window = window
	register(t, b, r)
	hooks := push.Hooks{Claim: func(_ time.Time, n int, _ error) { *claimed += n }} // called on RunOnce's goroutine
	return worker(t, b, rc, 3, push.WithOwner("w"), push.WithHooks(hooks))
}

// testPagesShareOneClaim: a backlog of four pages is served by one claim in
// one sweep. Each page's cursor is checkpointed before its first record is
// sent, under the lease the claim took, and the turn's last write releases
// the lease.
func testPagesShareOneClaim(t *testing.T, b Backend) {
	for _, window := range []int{1, 3} {
		stream := fmt.Sprintf("w%d", window)
		rc := &receiver{b: b}
		claimed := 0
		w := pageSetup(t, b, stream, 10, window, rc, &claimed)
		rep, err := w.RunOnce(t.Context(), at(0), 10)
		require.NoError(t, err)
		require.Equal(t, push.SweepReport{Registrations: 1, Records: 10, Deliveries: 10}, rep, "window %d", window)
		require.Equal(t, 1, claimed, "one claim served every page")

		got := rc.arrivals()
		require.Len(t, got, 10, "window %d: each record once", window)
		for i, a := range got {
			page := (a.n - 1) / 3
			if window == 1 {
				require.Equal(t, i+1, a.n, "window 1: in seq order")
			}
			require.Equal(t, uint64(3*page+1), a.cursor, "window %d: record %d was sent with the cursor at its page's start", window, a.n)
			require.Equal(t, "w#1", a.owner, "window %d: record %d was sent under the first claim's lease", window, a.n)
		}
		regIs(t, b, stream, "r", 11, 0, "", "the turn's last write released the lease")
	}
}

// testFailureOnALaterPage: a failure on the second page is one attempt at the
// first unacknowledged record, with the progress of the pages before it
// saved, and the next turn resends from there.
func testFailureOnALaterPage(t *testing.T, b Backend) {
	for _, window := range []int{1, 3} {
		stream := fmt.Sprintf("w%d", window)
		rc := &receiver{b: b, fail: func(n, try int) bool { return n == 5 && try == 1 }}
		claimed := 0
		w := pageSetup(t, b, stream, 10, window, rc, &claimed)
		rep, err := w.RunOnce(t.Context(), at(0), 10)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Retries, "window %d", window)
		st := regIs(t, b, stream, "r", 5, 1, "", "the cursor is at the first unacknowledged record; one attempt, however many were in flight; the retry released the lease")
		require.Contains(t, st.LastError, "500")
		evs := evidence(t, b, stream, "r")
		require.Len(t, evs, 1)
		require.Equal(t, uint64(5), evs[0].Seq)
		first := arrived(rc.arrivals())
		if window == 1 {
			require.Equal(t, []int{1, 2, 3, 4, 5}, first, "nothing after the failure was sent")
		} else {
			require.Equal(t, []int{1, 2, 3, 4, 5, 6}, sorted(first), "the window of page 2 was in flight together")
		}

		rep, err = w.RunOnce(t.Context(), st.NextAttemptAt, 10)
		require.NoError(t, err)
		require.Equal(t, 6, rep.Records, "window %d: from the failed record to the head", window)
		require.Equal(t, 2, claimed, "one claim a turn")
		again := arrived(rc.arrivals())[len(first):]
		require.Equal(t, []int{5, 6, 7, 8, 9, 10}, sorted(again), "every record from the failed one is sent again")
		require.Equal(t, uint64(11), get(t, b, stream, "r").NextSeq)
	}
}

func testSkipMovesPastPoison(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(0)), 2, store.Evidence{At: at(0), Error: "400 Bad Request"}))
	for _, bad := range []uint64{0, 1, 2, 7, 1 << 62} {
		require.ErrorIs(t, b.Skip(t.Context(), "s", "r", bad, at(1), "poison"), journal.ErrInvalid, "skip to %d", bad)
	}
	for _, reason := range []string{"", "\x1b[31mred", strings.Repeat("x", store.MaxEvidenceError+1)} {
		err := b.Skip(t.Context(), "s", "r", 3, at(1), reason)
		require.ErrorIs(t, err, journal.ErrInvalid, "reason %q", reason)
		require.ErrorContains(t, err, "invalid reason", "the error names the field")
	}
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq, "a refused skip changes nothing")

	require.NoError(t, b.Skip(t.Context(), "s", "r", 3, at(2), "record 2 is malformed"))
	require.True(t, regIs(t, b, "s", "r", 3, 0, "", "the skip").Parked, "a skip does not unpark")
	require.NoError(t, b.Skip(t.Context(), "s", "r", 6, at(3), "to the head"), "one past the head is allowed")

	evs := evidence(t, b, "s", "r")
	require.Equal(t, []string{store.EventSkip, store.EventSkip, ""}, events(evs))
	require.Equal(t, uint64(2), evs[1].Seq, "the evidence names the cursor skipped from")
	require.Equal(t, "record 2 is malformed", evs[1].Error)
	requireTime(t, at(2), evs[1].At, "skip evidence At")
}

func testRewindReplays(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Advance(t.Context(), claim(t, b, "s", "r", at(0)), 6))
	require.Empty(t, due(t, b, "webhook", "w", at(0), 10).Registrations)
	for _, bad := range []uint64{0, 7, 1 << 62} {
		require.ErrorIs(t, b.Rewind(t.Context(), "s", "r", bad, at(1)), journal.ErrInvalid, "rewind to %d", bad)
	}
	require.Equal(t, uint64(6), get(t, b, "s", "r").NextSeq)

	require.NoError(t, b.Rewind(t.Context(), "s", "r", 2, at(10)))
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(2), st.NextSeq, "rewind is the one way a cursor moves back")
	require.Equal(t, uint64(4), st.Lag())
	require.Equal(t, []string{"s/r"}, keys(due(t, b, "webhook", "w", at(10), 10).Registrations), "due at once")

	evs := evidence(t, b, "s", "r")
	require.Equal(t, []string{store.EventRewind}, events(evs))
	require.Equal(t, uint64(6), evs[0].Seq, "the evidence names the cursor rewound from")
	require.Equal(t, "rewound from #6 to #2", evs[0].Error, "and where to")

	err := b.Rewind(t.Context(), "s", "r", 3, at(11))
	require.ErrorIs(t, err, journal.ErrInvalid, "a rewind never moves the cursor forward")
	require.ErrorContains(t, err, "skip")
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq, "a refused rewind changed nothing")
	require.NoError(t, b.Rewind(t.Context(), "s", "r", 2, at(12)), "a rewind to the cursor retries it at once")
}

func testOperatorMovesAreDueAtOnce(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 1, at(100000), fail503(at(0))))
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(100000)), 1, store.Evidence{At: at(100000), Error: "ceiling"}))
	require.NoError(t, b.Unpark(t.Context(), "s", "r", at(200000)))
	requireTime(t, at(200000), get(t, b, "s", "r").NextAttemptAt, "unpark: NextAttemptAt = at")

	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(200000)), 1, at(900000), fail503(at(200000))))
	require.NoError(t, b.Rewind(t.Context(), "s", "r", 1, at(200010)))
	require.Len(t, due(t, b, "webhook", "w1", at(200010), 1).Registrations, 1, "rewind: due at once, whatever NextAttemptAt was")

	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(200100)), 1, at(900000), fail503(at(200100))))
	require.NoError(t, b.Skip(t.Context(), "s", "r", 2, at(200110), "poison"))
	require.Len(t, due(t, b, "webhook", "w2", at(200110), 1).Registrations, 1, "skip: due at once")
}
