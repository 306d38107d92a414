package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// A registration's rate (a setting, stored as given) and its pace (the
// limiter's state, written under a claim), and what Due tells a turn about
// the lease it took.
var rateTests = []test{
	testRateStored, testBadRateChangesNothing, testPaceHoldsTheNextClaim, testPaceIsFenced, testDueSaysWhenALeaseLapsed,
	testAHostFailureKeepsThePace, testRemovingARateEndsItsPace,
}

// testRateStored: a registration's rate is stored, returned by Get, List and
// Due, and replaced by a re-register; none is the zero Rate.
func testRateStored(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	r := reg("s", "r", "webhook")
	require.True(t, register(t, b, r).Rate.IsZero(), "no rate: no limit")
	r.Rate = store.Rate{Count: 600, Per: time.Minute}
	require.Equal(t, r.Rate, register(t, b, r).Rate)
	batch := due(t, b, "webhook", "w", at(0), 10)
	require.Len(t, batch.Registrations, 1)
	for i, st := range []store.Status{get(t, b, "s", "r"), list(t, b, store.ListQuery{Stream: "s"})[0], batch.Registrations[0]} {
		require.Equal(t, r.Rate, st.Rate, "Get, List and Due (#%d) return the rate the turn paces by", i)
	}
	r.Rate = store.Rate{Count: 10, Per: time.Second}
	require.Equal(t, r.Rate, register(t, b, r).Rate, "a re-register replaces the rate")
	r.Rate = store.Rate{}
	require.True(t, register(t, b, r).Rate.IsZero(), "and removes it")
}

// testBadRateChangesNothing: a rate out of its bounds is refused naming
// "rate", and the registration stays as it was.
func testBadRateChangesNothing(t *testing.T, b Backend) {
	r := reg("s", "r", "webhook")
	r.Rate = store.Rate{Count: 5, Per: time.Hour}
	register(t, b, r)
	for _, bad := range []store.Rate{{Count: 0, Per: time.Second}, {Count: 10, Per: 0}, {Count: store.MaxRateCount + 1, Per: time.Second},
		{Count: 10, Per: 2 * time.Second}, {Count: -1, Per: time.Minute}} {
		r.Rate = bad
		err := errOf(b.Register(t.Context(), r))
		require.ErrorIs(t, err, journal.ErrInvalid, "%+v", bad)
		require.ErrorContains(t, err, "invalid rate", "%+v", bad)
	}
	require.Equal(t, store.Rate{Count: 5, Per: time.Hour}, get(t, b, "s", "r").Rate, "a refused register changes nothing")
}

// testPaceHoldsTheNextClaim: Pace sets PacedUntil and holds the
// registration from Due until then, keeping the lease for the turn's last
// write, which keeps the instant; a re-register keeps it too. A pace
// earlier than the next attempt leaves the next attempt.
func testPaceHoldsTheNextClaim(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	require.True(t, get(t, b, "s", "r").PacedUntil.IsZero(), "no pace before the first burst")
	c := claim(t, b, "s", "r", at(0))
	until := at(0).Add(250 * time.Millisecond)
	require.NoError(t, b.Pace(t.Context(), c, until))
	st := regIs(t, b, "s", "r", 1, 0, c.Owner, "Pace keeps the lease")
	requireTime(t, until, st.PacedUntil, "PacedUntil")
	requireTime(t, until, st.NextAttemptAt, "NextAttemptAt")
	require.NoError(t, b.Advance(t.Context(), c, 4))
	st = regIs(t, b, "s", "r", 4, 0, "", "the turn's last write releases the lease")
	requireTime(t, until, st.NextAttemptAt, "Advance keeps the paced NextAttemptAt")
	require.Empty(t, due(t, b, "webhook", "w", until.Add(-time.Microsecond), 1).Registrations, "not due before its pace")
	requireTime(t, until, register(t, b, get(t, b, "s", "r").Registration).PacedUntil, "a re-register keeps the pace")

	c = due(t, b, "webhook", "w", until, 1).Registrations[0].Claim()
	require.NoError(t, b.Retry(t.Context(), c, 4, at(30), fail503(until)))
	c = claim(t, b, "s", "r", at(30))
	require.NoError(t, b.Pace(t.Context(), c, at(1)))
	st = get(t, b, "s", "r")
	requireTime(t, at(1), st.PacedUntil, "PacedUntil")
	requireTime(t, at(30), st.NextAttemptAt, "an earlier pace leaves the next attempt as it was")
	require.Empty(t, evidence(t, b, "s", "r")[1:], "a pace is no evidence")
}

// testRemovingARateEndsItsPace: a re-register without a rate drops the
// pace, and a registration that waited only for it is due at once (its
// wake marker too); one waiting for a retry of its own keeps it.
func testRemovingARateEndsItsPace(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	r := get(t, b, "s", "r").Registration
	r.Rate = store.Rate{Count: 1, Per: time.Hour}
	register(t, b, r)
	c := claim(t, b, "s", "r", at(0))
	require.NoError(t, b.Pace(t.Context(), c, at(3600)))
	require.NoError(t, b.Advance(t.Context(), c, 2))
	require.Empty(t, due(t, b, "webhook", "w", at(1), 1).Registrations, "held by the pace")

	r.Rate = store.Rate{}
	st := register(t, b, r)
	require.True(t, st.PacedUntil.IsZero(), "no rate, no pace")
	require.False(t, st.NextAttemptAt.After(at(1)), "due at once: it waited for the pace alone")
	batch := due(t, b, "webhook", "w", at(1), 1)
	require.Equal(t, []string{"s/r"}, keys(batch.Registrations), "claimed at once")

	// A retry of its own is kept when the rate goes. (The rate comes back
	// before the claim: an update takes a turn's lease, Store.Register.)
	require.NoError(t, b.Advance(t.Context(), batch.Registrations[0].Claim(), 2))
	r.Rate = store.Rate{Count: 1, Per: time.Hour}
	register(t, b, r)
	c = claim(t, b, "s", "r", at(1))
	require.NoError(t, b.Pace(t.Context(), c, at(3600)))
	require.NoError(t, b.Retry(t.Context(), c, 2, at(7200), fail503(at(2))))
	r.Rate = store.Rate{}
	requireTime(t, at(7200), register(t, b, r).NextAttemptAt, "its retry kept")
}

// testPaceIsFenced: Pace applies only under the live lease; bad input
// changes nothing.
func testPaceIsFenced(t *testing.T, b Backend) {
	streamWithReg(t, b, 3)
	a := due(t, b, "webhook", "A", at(0), 1).Registrations[0].Claim()
	bb := due(t, b, "webhook", "B", at(60), 1).Registrations[0].Claim() // A's lease expired
	require.ErrorIs(t, b.Pace(t.Context(), a, at(100)), store.ErrLeaseLost)
	require.ErrorIs(t, b.Pace(t.Context(), store.Claim{Stream: "s", ID: "nobody", Owner: "B"}, at(100)), journal.ErrNotFound)
	require.ErrorIs(t, b.Pace(t.Context(), bb, time.Time{}), journal.ErrInvalid, "a zero instant")
	require.ErrorIs(t, b.Pace(t.Context(), store.Claim{Stream: "s", ID: "r"}, at(100)), journal.ErrInvalid, "no owner")
	st := regIs(t, b, "s", "r", 1, 0, "B", "nothing changed")
	require.True(t, st.PacedUntil.IsZero())
	requireTime(t, at(60), st.NextAttemptAt, "NextAttemptAt")
}

// testDueSaysWhenALeaseLapsed: a claim that takes a lease no write released
// (its turn was killed, or fenced out late) says so; one that follows a
// released lease, or none, does not.
func testDueSaysWhenALeaseLapsed(t *testing.T, b Backend) {
	streamWithReg(t, b, 3)
	first := due(t, b, "webhook", "A", at(0), 1).Registrations[0]
	require.False(t, first.Lapsed, "a first claim")
	second := due(t, b, "webhook", "B", at(60), 1).Registrations[0] // A never wrote
	require.True(t, second.Lapsed, "A's lease lapsed")
	require.NoError(t, b.Advance(t.Context(), second.Claim(), 2))
	third := due(t, b, "webhook", "C", at(61), 1).Registrations[0]
	require.False(t, third.Lapsed, "B released its lease")
	require.False(t, get(t, b, "s", "r").Lapsed, "Get never says it")
	require.NoError(t, b.Pause(t.Context(), "s", "r", at(62), "ops", ""))
	require.NoError(t, b.Resume(t.Context(), "s", "r", at(63), "ops"))
	require.False(t, due(t, b, "webhook", "D", at(64), 1).Registrations[0].Lapsed, "an operator's write released C's lease")
}

// testAHostFailureKeepsThePace: a host-level failure ends a turn that paced
// its burst; its host's retry comes sooner than the pace, yet the
// registration is not due before the pace. Due earlier, a claim could only
// wait (no request may start), and a down host's probe spent on it would hold
// every registration of the host for another probe window.
func testAHostFailureKeepsThePace(t *testing.T, b Backend) {
	streamWithReg(t, b, 3)
	c := claim(t, b, "s", "r", at(0))
	until := at(3600) // a burst of 1/h
	require.NoError(t, b.Pace(t.Context(), c, until))
	st := get(t, b, "s", "r")
	hostFail(t, b, st, at(0))
	st = get(t, b, "s", "r")
	requireTime(t, until, st.PacedUntil, "PacedUntil")
	require.False(t, st.NextAttemptAt.Before(until), "due at %v, before its pace at %v", st.NextAttemptAt, until)
	require.Empty(t, due(t, b, "webhook", "w", until.Add(-time.Second), 1).Registrations, "not due before its pace")
	require.Len(t, due(t, b, "webhook", "w", until, 1).Registrations, 1, "due at its pace")
}
