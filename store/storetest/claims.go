package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// What Due claims: registrations with work, under exclusive leases, oldest
// attempt first, within the per-host cap; and host health, which holds a
// down host's registrations but for one probe at a time.
var dueTests = []test{
	testOnlyRegistrationsWithWork, testLimitAndSaturation, testLeaseIsExclusiveUntilExpiry,
	testOldestAttemptFirst, testBadDueQueryChangesNothing, testSaturationStarvesNoOne,
	testConcurrentClaimsAreExclusive, testPerHostCap, testOldestFirstPastHostsAtTheirCap, testHostFollowsTheURL,
	testRenewExtendsOnlyLeasesStillHeld,
}

var hostTests = []test{
	testFailureChargesTheHostNotTheRegistration, testDownAfterAFewInARowHoldsItsRegistrations, testAHeldRegistrationWaitsForItsHostsProbe,
	testOneProbePerWindowAtPinnedInstants, testTwoClaimersRacingAProbeGetOne,
	testAnAnswerReleasesEveryRegistration, testUnavailablePastTheHorizonEachChangeToldOnce,
	testResetByAnOperator, testAPathThatNeverAnswersBacksOffWhileItsHostAnswers,
	testBadHostInputChangesNothing, testAHostWithNoRegistrationAndNoFailureForTheRetentionAgeIsRemoved,
	testAHostsSchemeIsKeptOnItsRowBesideItsHealth,
}

func testOnlyRegistrationsWithWork(t *testing.T, b Backend) {
	streamWithReg(t, b, 3, reg("s", "due", "webhook"), regFrom("s", "at-head", "webhook", 4), reg("s", "parked", "webhook"))
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "parked", at(0)), 1, store.Evidence{At: at(0), Error: "410 Gone"}))
	register(t, b, reg("s", "later", "webhook"))
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "later", at(0)), 1, at(30), fail503(at(0))))
	register(t, b, reg("s", "other-ns-1", "cloudevents"))
	register(t, b, reg("s", "other-ns-2", "a2a"))
	register(t, b, reg("empty-stream", "nothing-yet", "webhook"))

	uncounted, err := b.Due(t.Context(), store.DueQuery{At: at(5), Limit: 1, Namespace: "nobody", Owner: "w0", LeaseUntil: at(6)})
	require.NoError(t, err)
	require.Zero(t, uncounted.Unserved, "the others' due registrations are counted only when asked")
	batch := due(t, b, "webhook", "w1", at(10), 100)
	require.Equal(t, []string{"s/due"}, keys(batch.Registrations),
		"not at head, not parked, not before NextAttemptAt, not another namespace")
	require.Equal(t, 2, batch.Unserved, "due registrations of other namespaces are counted, not claimed")
	require.False(t, batch.More)
	got := batch.Registrations[0]
	require.Equal(t, uint64(3), got.Head, "Due returns the stream's head")
	require.Equal(t, "w1", got.LeaseOwner)
	requireTime(t, at(10).Add(time.Minute), got.LeaseUntil, "lease stamped")
	require.Equal(t, "w1", get(t, b, "s", "due").LeaseOwner, "the lease is stored")

	batch = due(t, b, "webhook", "w1", at(30), 100)
	require.Equal(t, []string{"s/later"}, keys(batch.Registrations), "due at exactly NextAttemptAt; s/due is still leased")

	require.NoError(t, errOf(b.Append(t.Context(), "s", entry("new"))))
	batch = due(t, b, "webhook", "w2", at(200), 100)
	require.ElementsMatch(t, []string{"s/due", "s/later", "s/at-head"}, keys(batch.Registrations),
		"an append makes a registration at the head due; expired leases are claimable")

	require.NoError(t, errOf(b.Append(t.Context(), "empty-stream", entry("first"))))
	batch = due(t, b, "webhook", "w3", at(200), 100)
	require.Equal(t, []string{"empty-stream/nothing-yet"}, keys(batch.Registrations))
}

func testLimitAndSaturation(t *testing.T, b Backend) {
	streamWithRegs(t, b, 1, 5)
	var all []string
	for i, want := range []struct {
		n    int
		more bool
		why  string
	}{{2, true, "more than the limit were due"}, {2, true, "still more"}, {1, false, "the extra row looked for is not claimed"}} {
		batch := due(t, b, "webhook", fmt.Sprintf("w%d", i+1), at(0), 2)
		require.Len(t, batch.Registrations, want.n)
		require.Equal(t, want.more, batch.More, want.why)
		all = append(all, keys(batch.Registrations)...)
	}
	require.ElementsMatch(t, []string{"s/r0", "s/r1", "s/r2", "s/r3", "s/r4"}, all, "each registration claimed once")
	require.Empty(t, due(t, b, "webhook", "w4", at(1), 10).Registrations, "all leased")
}

func testLeaseIsExclusiveUntilExpiry(t *testing.T, b Backend) {
	streamWithReg(t, b, 2)
	require.Len(t, due(t, b, "webhook", "A", at(0), 10).Registrations, 1)
	require.Empty(t, due(t, b, "webhook", "B", at(0), 10).Registrations, "a live lease hides it from B")
	require.Empty(t, due(t, b, "webhook", "A", at(59), 10).Registrations, "and from A itself, until it expires")
	got := due(t, b, "webhook", "B", at(60), 10)
	require.Equal(t, []string{"s/r"}, keys(got.Registrations), "expired at LeaseUntil: B may claim it")
	require.Equal(t, "B", got.Registrations[0].LeaseOwner)

	// Advance releases the lease: due again at once while there is work.
	require.NoError(t, b.Advance(t.Context(), got.Registrations[0].Claim(), 2))
	require.True(t, regIs(t, b, "s", "r", 2, 0, "", "Advance released the lease").LeaseUntil.IsZero())
	again := due(t, b, "webhook", "A", at(61), 10)
	require.Equal(t, []string{"s/r"}, keys(again.Registrations))
	require.NoError(t, b.Advance(t.Context(), again.Registrations[0].Claim(), 3))
	require.Empty(t, due(t, b, "webhook", "A", at(62), 10).Registrations, "at the head: idle, not due")
}

// Renew extends the leases its claims still hold, and no other: not one
// another worker took over after expiry, nor one released; a bad argument
// changes nothing.
func testRenewExtendsOnlyLeasesStillHeld(t *testing.T, b Backend) {
	streamWithRegs(t, b, 2, 3)
	held := due(t, b, "webhook", "A", at(0), 3).Registrations
	require.Len(t, held, 3)
	byID := map[string]store.Claim{}
	for _, st := range held {
		byID[st.ID] = st.Claim()
	}
	require.NoError(t, b.Advance(t.Context(), byID["r2"], 1)) // released
	taken := due(t, b, "webhook", "B", at(30), 10).Registrations
	require.ElementsMatch(t, []string{"s/r2"}, keys(taken), "only the released one: the others' leases are live")

	for _, bad := range []struct {
		until  time.Time
		claims []store.Claim
	}{{time.Time{}, []store.Claim{byID["r0"]}}, {at(100), []store.Claim{{Stream: "s", ID: "r0"}}}} {
		_, err := b.Renew(t.Context(), bad.until, bad.claims)
		require.ErrorIs(t, err, journal.ErrInvalid)
	}
	renewed, err := b.Renew(t.Context(), at(0).Add(2*time.Minute), []store.Claim{byID["r0"], byID["r1"], byID["r2"],
		{Stream: "s", ID: "gone", Owner: "A"}})
	require.NoError(t, err)
	require.ElementsMatch(t, []store.Claim{byID["r0"], byID["r1"]}, renewed, "not the released one, nor one never registered")
	requireTime(t, at(0).Add(2*time.Minute), get(t, b, "s", "r0").LeaseUntil, "renewed")
	require.Equal(t, "B", get(t, b, "s", "r2").LeaseOwner, "a lease taken over is left alone")
	require.Empty(t, due(t, b, "webhook", "C", at(80), 10).Registrations, "past the first lease, within the renewed one")

	got := due(t, b, "webhook", "C", at(0).Add(2*time.Minute), 10)
	require.ElementsMatch(t, []string{"s/r0", "s/r1", "s/r2"}, keys(got.Registrations), "expired at the renewed LeaseUntil (and B's)")
	renewed, err = b.Renew(t.Context(), at(0).Add(3*time.Minute), []store.Claim{byID["r0"]})
	require.NoError(t, err)
	require.Empty(t, renewed, "A's claim was taken over by C: not renewed")
	require.Equal(t, "C", get(t, b, "s", "r0").LeaseOwner)
}

func testOldestAttemptFirst(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	for i, wait := range []int{30, 10, 20} {
		id := fmt.Sprintf("r%d", i)
		register(t, b, reg("s", id, "webhook"))
		require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", id, at(0)), 1, at(wait), fail503(at(0))))
	}
	batch := due(t, b, "webhook", "w", at(100), 3)
	require.Equal(t, []string{"s/r1", "s/r2", "s/r0"}, keys(batch.Registrations), "the longest-waiting first")
}

func testBadDueQueryChangesNothing(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	good := store.DueQuery{At: at(0), Limit: 10, Namespace: "webhook", Owner: "w", LeaseUntil: at(60)}
	for name, bad := range map[string]func(q *store.DueQuery){
		"limit 0":               func(q *store.DueQuery) { q.Limit = 0 },
		"negative limit":        func(q *store.DueQuery) { q.Limit = -1 },
		"zero at":               func(q *store.DueQuery) { q.At = time.Time{} },
		"empty owner":           func(q *store.DueQuery) { q.Owner = "" },
		"lease ending at once":  func(q *store.DueQuery) { q.LeaseUntil = q.At },
		"bad namespace":         func(q *store.DueQuery) { q.Namespace = "Web Hook" },
		"negative per-host cap": func(q *store.DueQuery) { q.MaxPerHost = -1 },
		"negative busy count": func(q *store.DueQuery) {
			q.MaxPerHost, q.Busy = 2, map[string]int{"receiver.example:443": -1}
		},
	} {
		q := good
		bad(&q)
		require.ErrorIs(t, errOf(b.Due(t.Context(), q)), journal.ErrInvalid, name)
	}
	require.Empty(t, get(t, b, "s", "r").LeaseOwner, "no lease was taken")
}

func testSaturationStarvesNoOne(t *testing.T, b Backend) {
	streamWithRegs(t, b, 50, 3)
	served := map[string]int{}
	for i := range 6 {
		batch := due(t, b, "webhook", fmt.Sprintf("w%d", i), at(i), 2)
		require.Len(t, batch.Registrations, 2)
		for _, st := range batch.Registrations {
			served[st.ID]++
			requireTime(t, at(i), st.NextAttemptAt, "Due stamps the claim's instant")
			require.NoError(t, b.Advance(t.Context(), st.Claim(), st.NextSeq+1)) // one record; work remains
		}
	}
	// Least recently claimed first: with 3 due and room for 2, nobody waits
	// more than one sweep (ties between equal instants may go either way).
	for _, id := range []string{"r0", "r1", "r2"} {
		require.GreaterOrEqual(t, served[id], 3, "%s was served %d times in 6 saturated sweeps: %v", id, served[id], served)
	}
}

// raceDue runs n claimers of Due at when at once (one-minute leases) and
// returns all they claimed.
func raceDue(t *testing.T, b Backend, n int, when time.Time, limit int) []store.Status {
	var (
		mu  sync.Mutex
		all []store.Status
	)
	race(t, n, func(w int) error {
		batch, err := b.Due(t.Context(), store.DueQuery{At: when, Limit: limit, Namespace: "webhook",
			Owner: fmt.Sprintf("w%d", w), LeaseUntil: when.Add(time.Minute)})
		mu.Lock()
		defer mu.Unlock()
		all = append(all, batch.Registrations...)
		return err
	})
	return all
}

func testConcurrentClaimsAreExclusive(t *testing.T, b Backend) {
	streamWithRegs(t, b, 1, 20)
	claims := map[string]int{}
	for _, k := range keys(raceDue(t, b, 8, at(0), 5)) {
		claims[k]++
	}
	require.Len(t, claims, 20, "all 20 were claimed")
	for k, n := range claims {
		require.Equal(t, 1, n, "%s claimed by %d workers under one live lease", k, n)
	}
}

// regAt is reg with the URL on a host of its own.
func regAt(stream, id, ns, url string) store.Registration {
	r := reg(stream, id, ns)
	r.URL = url
	return r
}

func dueCapped(t *testing.T, b Backend, owner string, when time.Time, limit, perHost int, busy map[string]int) store.DueBatch {
	t.Helper()
	batch, err := b.Due(t.Context(), store.DueQuery{At: when, Limit: limit, Namespace: "webhook", Owner: owner,
		LeaseUntil: when.Add(time.Minute), MaxPerHost: perHost, Busy: busy})
	require.NoError(t, err)
	return batch
}

func testPerHostCap(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	// Five registrations on one host, written three ways; two on another.
	for i, u := range []string{"https://big.example/a", "https://BIG.example:443/b", "https://big.example/c?x=1",
		"https://big.example/d", "https://big.example/e", "http://127.0.0.2:8080/in", "http://127.0.0.2:8080/in2"} {
		register(t, b, regAt("s", fmt.Sprintf("r%d", i), "webhook", u))
	}
	const big, small = "big.example:443", "127.0.0.2:8080"
	for i, c := range []struct {
		limit, perHost int
		busy           map[string]int
		want           map[string]int
		more           bool
		why            string
	}{
		{10, 2, map[string]int{big: 1}, map[string]int{big: 1, small: 2}, false,
			"a host gets MaxPerHost minus what is busy, the same host however its URL is written; those left out by the cap are not More"},
		{10, 2, map[string]int{big: 2}, map[string]int{}, false, "a host at its cap gets nothing (the other host's are leased)"},
		{1, 3, nil, map[string]int{big: 1}, true, "room left under the cap beyond the limit is More"},
		{10, 0, map[string]int{big: 100}, map[string]int{big: 3}, false,
			"MaxPerHost 0 is no cap: Busy is ignored, and every due registration left is claimed"},
	} {
		batch := dueCapped(t, b, fmt.Sprintf("w%d", i+1), at(0), c.limit, c.perHost, c.busy)
		got := map[string]int{}
		for _, st := range batch.Registrations {
			got[st.Host()]++
		}
		require.Equal(t, c.want, got, c.why)
		require.Equal(t, c.more, batch.More, c.why)
	}
}

// Registrations of a host at its cap hide none behind them, at any cursor:
// a claim takes the oldest of those with room, however many older ones it
// passes over (a store that reads each cursor's registrations a few at a
// time must read on, and merge the cursors in claim order).
func testOldestFirstPastHostsAtTheirCap(t *testing.T, b Backend) {
	appendN(t, b, "s", 2)
	dueAt := func(r store.Registration, cursor uint64, wait int) {
		register(t, b, r)
		require.NoError(t, b.Retry(t.Context(), claim(t, b, r.Stream, r.ID, at(0)), cursor, at(wait), fail503(at(0))))
	}
	for i := range 20 {
		dueAt(regAt("s", fmt.Sprintf("x%02d", i), "webhook", fmt.Sprintf("https://busy.example/%d", i)), 1, 1+i)
	}
	dueAt(regAt("s", "y", "webhook", "https://room.example/y"), 1, 30)
	z := regAt("s", "z", "webhook", "https://other.example/z")
	z.NextSeq = 2
	dueAt(z, 2, 31)

	busy := map[string]int{"busy.example:443": 2}
	batch := dueCapped(t, b, "w1", at(40), 1, 2, busy)
	require.Equal(t, []string{"s/y"}, keys(batch.Registrations),
		"the oldest with room: after 20 older ones of a host at its cap, before one at the next cursor")
	require.True(t, batch.More, "s/z had room too")
	batch = dueCapped(t, b, "w2", at(40), 10, 2, busy)
	require.Equal(t, []string{"s/z"}, keys(batch.Registrations))
	require.False(t, batch.More)
}

func testHostFollowsTheURL(t *testing.T, b Backend) {
	// The second registration is an update of the first's destination.
	streamWithReg(t, b, 1, regAt("s", "r", "webhook", "https://old.example/in"), regAt("s", "r", "webhook", "https://new.example/in"))
	batch := dueCapped(t, b, "w", at(0), 10, 1, map[string]int{"old.example:443": 0, "new.example:443": 1})
	require.Empty(t, batch.Registrations, "the cap is counted against the host of the current URL")
	batch = dueCapped(t, b, "w", at(0), 10, 1, map[string]int{"old.example:443": 1})
	require.Equal(t, []string{"s/r"}, keys(batch.Registrations))
}

// The hosts of the suite's registrations, in store.HostOf form.
const (
	hostA = "a.example:443"
	hostB = "b.example:443"
)

// horizon is the suite's: the shortest, so that the way to it is short.
const horizon = store.MinHostHorizon

// onHost is a webhook registration whose URL is on host (":443" form).
func onHost(stream, id, host string) store.Registration {
	return regAt(stream, id, "webhook", "https://"+host[:len(host)-len(":443")]+"/inbox/"+id)
}

// hostFail records a host-level failure of the claimed registration st at when.
func hostFail(t *testing.T, b Backend, st store.Status, when time.Time) store.Host {
	t.Helper()
	h, err := b.HostFailed(t.Context(), store.HostFailure{Claim: st.Claim(), NextSeq: st.NextSeq, Host: store.HostOf(st.URL),
		Evidence: store.Evidence{At: when, Seq: st.NextSeq, Error: "dial: connection refused"}, Horizon: horizon})
	require.NoError(t, err)
	return h
}

func hosts(t *testing.T, b Backend, q store.HostQuery) []store.Host {
	t.Helper()
	list, err := b.Hosts(t.Context(), q)
	require.NoError(t, err)
	return list
}

func oneHost(t *testing.T, b Backend, host string) store.Host {
	t.Helper()
	list := hosts(t, b, store.HostQuery{Host: host})
	require.Len(t, list, 1, "host %s is stored", host)
	return list[0]
}

// dueOn claims (as owner) what is due at when and returns the claims of
// host's registrations; it releases the others untouched.
func dueOn(t *testing.T, b Backend, host, owner string, when time.Time) []store.Status {
	t.Helper()
	var on []store.Status
	for _, st := range due(t, b, "webhook", owner, when, 100).Registrations {
		if store.HostOf(st.URL) == host {
			on = append(on, st)
		} else {
			require.NoError(t, b.Advance(t.Context(), st.Claim(), st.NextSeq))
		}
	}
	return on
}

// downHost registers n registrations on hostA (with a record each) and one
// on hostB, and brings hostA down with store.HostDownAfter failures of its
// registrations, at when, when+10s and when+20s: down since when+20s.
func downHost(t *testing.T, b Backend, n int, when time.Time) store.Host {
	t.Helper()
	appendN(t, b, "s", 1)
	for i := range n {
		register(t, b, onHost("s", fmt.Sprintf("a%d", i), hostA))
	}
	register(t, b, onHost("s", "b", hostB))
	var h store.Host
	for i := range store.HostDownAfter {
		when := when.Add(time.Duration(i) * 10 * time.Second)
		on := dueOn(t, b, hostA, fmt.Sprintf("down-%d", i), when)
		require.NotEmpty(t, on, "failure %d: a registration of %s was claimed", i+1, hostA)
		h = hostFail(t, b, on[0], when)
		for _, st := range on[1:] {
			require.NoError(t, b.Advance(t.Context(), st.Claim(), st.NextSeq))
		}
	}
	return h
}

func testFailureChargesTheHostNotTheRegistration(t *testing.T, b Backend) {
	streamWithReg(t, b, 3, onHost("s", "r", hostA))
	st := due(t, b, "webhook", "w", at(0), 1).Registrations[0]
	h, err := b.HostFailed(t.Context(), store.HostFailure{Claim: st.Claim(), NextSeq: 2, Host: hostA,
		Evidence: store.Evidence{At: at(0), Seq: 2, Error: "timeout: no answer within 15s\x00\xff"}, Horizon: horizon})
	require.NoError(t, err)
	require.Equal(t, store.HostUp, h.State, "one failure does not make a host down")
	require.Equal(t, 1, h.Failures)
	require.Equal(t, hostA, h.Host)
	require.NotContains(t, h.LastError, "\x00", "a receiver's text is cleaned before it is stored")

	got := regIs(t, b, "s", "r", 2, 0, "", "a host-level failure charges the registration no attempt, keeps the progress before it and releases the lease")
	require.Equal(t, 1, got.HostFailures, "the registration counts its host-level failures, for its backoff")
	requireTime(t, store.HostRetryAt("s", "r", 1, at(0)), got.NextAttemptAt, "next attempt")
	evs := evidence(t, b, "s", "r")
	require.Len(t, evs, 1)
	require.Equal(t, store.EventHostFailed, evs[0].Event)
	require.Zero(t, evs[0].Attempt, "no attempt was charged")
	requireTime(t, got.NextAttemptAt, evs[0].NotBefore, "evidence says when it is tried again")

	// Many host-level failures never park it (a retry ceiling of 1 would).
	for i := 1; i <= 10; i++ {
		when := at(i * 1000)
		if batch := due(t, b, "webhook", fmt.Sprintf("w%d", i), when, 1); len(batch.Registrations) > 0 {
			hostFail(t, b, batch.Registrations[0], when) // none while held: its host is down and no probe is due
		}
	}
	require.False(t, regIs(t, b, "s", "r", 2, 0, "", "never charged").Parked)
}

func testDownAfterAFewInARowHoldsItsRegistrations(t *testing.T, b Backend) {
	h := downHost(t, b, 3, at(0))
	require.Equal(t, store.HostDown, h.State)
	require.Equal(t, 3, h.Failures)
	requireTime(t, at(20), h.Since, "down since the failure that made it so")
	requireTime(t, at(20).Add(store.ProbeDelay(hostA, 0)), h.NextProbeAt, "first probe")

	stored := oneHost(t, b, hostA)
	require.Equal(t, store.HostDown, stored.State)
	require.Equal(t, 3, stored.Held, "its three registrations with work are held")
	requireTime(t, h.NextProbeAt, stored.NextProbeAt, "stored probe instant")

	// Until the probe instant nothing of hostA is claimed, hostB's is.
	batch := due(t, b, "webhook", "w", h.NextProbeAt.Add(-time.Second), 100)
	require.Equal(t, []string{"s/b"}, keys(batch.Registrations), "a down host's registrations are held")
	require.False(t, regIs(t, b, "s", "a0", 1, 0, "", "held: not charged").Parked, "held: not parked")

	// A new registration of the down host is held too.
	register(t, b, onHost("s", "a-new", hostA))
	require.Equal(t, 4, oneHost(t, b, hostA).Held)
}

// testAHeldRegistrationWaitsForItsHostsProbe: a down host's registrations
// are due no earlier than its probe (store.Host.HeldTo), so that a claim's
// index range leaves them out instead of reading them at every claim; a
// failed probe moves them to the next; the answer makes them due at once,
// except one whose own retry comes later, which keeps it.
func testAHeldRegistrationWaitsForItsHostsProbe(t *testing.T, b Backend) {
	h := downHost(t, b, 3, at(0))
	heldTo := func(when time.Time, ids []string, why string) {
		t.Helper()
		for _, id := range ids {
			require.False(t, get(t, b, "s", id).NextAttemptAt.Before(when), "%s: %s", id, why)
		}
	}
	heldTo(h.NextProbeAt, []string{"a0", "a1", "a2"}, "held to the probe")

	// The first probe's receiver answers 503: a retry of its own, a day on.
	probe := dueOn(t, b, hostA, "probe-1", h.NextProbeAt)
	require.Len(t, probe, 1)
	own, ownAt := probe[0].ID, h.NextProbeAt.Add(24*time.Hour)
	require.NoError(t, b.Retry(t.Context(), probe[0].Claim(), 1, ownAt, fail503(h.NextProbeAt)))
	var rest []string
	for _, id := range []string{"a0", "a1", "a2"} {
		if id != own {
			rest = append(rest, id)
		}
	}
	moved := oneHost(t, b, hostA).NextProbeAt
	heldTo(moved, rest, "held to the probe the claim moved")

	// The second fails at the host level: the rest wait for the next.
	probe = dueOn(t, b, hostA, "probe-2", moved)
	require.Len(t, probe, 1)
	require.NotEqual(t, own, probe[0].ID, "its own retry is a day on")
	failed := hostFail(t, b, probe[0], moved)
	heldTo(failed.NextProbeAt, rest, "a failed probe holds them to the next")

	// An answer releases them at once; the one with a later retry of its own keeps it.
	answered := failed.NextProbeAt.Add(time.Second)
	_, err := b.HostAnswered(t.Context(), hostA, answered)
	require.NoError(t, err)
	for _, id := range rest {
		require.False(t, get(t, b, "s", id).NextAttemptAt.After(answered), id+": released, due at the answer")
	}
	requireTime(t, ownAt, get(t, b, "s", own).NextAttemptAt, "its own retry kept")
	require.ElementsMatch(t, append([]string{"s/b"}, mapped(rest, func(id string) string { return "s/" + id })...),
		keys(due(t, b, "webhook", "released", answered, 100).Registrations))
}

func testOneProbePerWindowAtPinnedInstants(t *testing.T, b Backend) {
	probeAt := downHost(t, b, 3, at(0)).NextProbeAt
	for n := 1; n <= 4; n++ {
		probes := dueOn(t, b, hostA, fmt.Sprintf("p%d", n), probeAt)
		require.Len(t, probes, 1, "probe %d: exactly one registration of the down host goes through", n)
		for _, st := range due(t, b, "webhook", fmt.Sprintf("p%d-again", n), probeAt, 100).Registrations {
			require.NotEqual(t, hostA, store.HostOf(st.URL), "probe %d: the probe instant moved with the claim", n)
		}
		stored := oneHost(t, b, hostA)
		requireTime(t, probeAt.Add(store.ProbeDelay(hostA, n)), stored.NextProbeAt, fmt.Sprintf("probe %d moves the next", n))
		require.Equal(t, n, stored.Probes)
		failed := hostFail(t, b, probes[0], probeAt)
		require.Equal(t, store.HostDown, failed.State, "a failed probe keeps it down")
		requireTime(t, stored.NextProbeAt, failed.NextProbeAt, "a failed probe does not move the probe instant again")
		probeAt = failed.NextProbeAt
	}
	// The schedule is the formula's, pinned (store's tests pin ProbeDelay).
	require.Equal(t, store.Backoff(hostA, "probe", 3), store.ProbeDelay(hostA, 0))
}

func testTwoClaimersRacingAProbeGetOne(t *testing.T, b Backend) {
	h := downHost(t, b, 6, at(0))
	probes := 0
	for _, st := range raceDue(t, b, 8, h.NextProbeAt, 100) {
		if store.HostOf(st.URL) == hostA {
			probes++
		}
	}
	require.Equal(t, 1, probes, "eight claimers at the probe instant: one probe")
}

func testAnAnswerReleasesEveryRegistration(t *testing.T, b Backend) {
	h := downHost(t, b, 3, at(0))
	batch := due(t, b, "webhook", "probe", h.NextProbeAt, 100)
	require.Equal(t, store.HostDown, oneHost(t, b, hostA).State)
	for _, st := range batch.Registrations {
		require.NoError(t, b.Advance(t.Context(), st.Claim(), st.NextSeq))
	}
	require.Contains(t, mapped(batch.Hosts, func(h store.Host) string { return h.Host }), hostA,
		"Due tells the worker that the probe's host is troubled")

	up, err := b.HostAnswered(t.Context(), hostA, h.NextProbeAt)
	require.NoError(t, err)
	require.Equal(t, store.HostUp, up.State)
	require.Zero(t, up.Failures)
	require.True(t, up.NextProbeAt.IsZero())
	requireTime(t, h.NextProbeAt, up.Since, "up since the answer")
	require.Zero(t, oneHost(t, b, hostA).Held)

	later := h.NextProbeAt.Add(time.Hour)
	all := due(t, b, "webhook", "released", later, 100)
	require.ElementsMatch(t, []string{"s/a0", "s/a1", "s/a2", "s/b"}, keys(all.Registrations), "every held registration is released at once")
	require.Empty(t, all.Hosts, "a host in good health is not reported")
	for _, id := range []string{"a0", "a1", "a2"} {
		require.Zero(t, get(t, b, "s", id).Attempts)
	}

	// An answer from a host never stored stores nothing.
	fresh, err := b.HostAnswered(t.Context(), "never.example:443", later)
	require.NoError(t, err)
	require.Equal(t, store.HostUp, fresh.State)
	require.Empty(t, hosts(t, b, store.HostQuery{Host: "never.example:443"}))
}

// testUnavailablePastTheHorizonEachChangeToldOnce: a host down past the
// horizon is unavailable, probed hourly, its registrations held and never
// charged; each change of its state is told once (herald/events), the
// failures between them are not.
// failProbes fails every probe of hostA, down as h, until it is
// unavailable, and returns it with the instant of the last probe.
func failProbes(t *testing.T, b Backend, h store.Host) (store.Host, time.Time) {
	t.Helper()
	when := h.NextProbeAt
	for i := 0; i < 1000 && h.State == store.HostDown; i++ {
		for _, st := range dueOn(t, b, hostA, fmt.Sprintf("p%d", i), when) {
			h = hostFail(t, b, st, when)
		}
		if h.State == store.HostDown {
			when = oneHost(t, b, hostA).NextProbeAt
		}
	}
	return h, when
}

func testUnavailablePastTheHorizonEachChangeToldOnce(t *testing.T, b Backend) {
	down := downHost(t, b, 2, at(0))
	recs := heraldEvents(t, b)
	require.Equal(t, []string{store.KindHostDown}, eventKinds(recs), "one event as it went down, none for the failures before")
	require.Equal(t, store.OperationalEvent{Kind: store.KindHostDown, Host: hostA, Reason: "dial: connection refused", At: down.Since},
		payload(t, recs[0]), "down since")
	h, when := failProbes(t, b, down)
	require.Equal(t, store.HostUnavailable, h.State, "down past the horizon: unavailable")
	require.Equal(t, []string{store.KindHostDown, store.KindHostUnavailable}, eventKinds(heraldEvents(t, b)), "failed probes while down tell nothing")
	require.False(t, when.Before(down.Since.Add(horizon)), "not before the horizon")
	requireTime(t, when, h.Since, "unavailable since the failure past the horizon")
	requireTime(t, when.Add(store.UnavailableProbeInterval), h.NextProbeAt, "probes slow to the longest interval")
	require.Equal(t, 2, oneHost(t, b, hostA).Held, "its registrations are held, for that reason")
	require.Len(t, hosts(t, b, store.HostQuery{State: store.HostUnavailable}), 1)

	// The next probe is an hour on, then every hour.
	require.Len(t, dueOn(t, b, hostA, "hourly", h.NextProbeAt), 1)
	requireTime(t, h.NextProbeAt.Add(store.UnavailableProbeInterval), oneHost(t, b, hostA).NextProbeAt, "hourly")
	for _, id := range []string{"a0", "a1"} {
		st := get(t, b, "s", id)
		require.False(t, st.Parked, "nothing is parked because a host was down")
		require.Zero(t, st.Attempts)
	}

	up := h.NextProbeAt.Add(time.Second)
	require.NoError(t, errOf(b.HostAnswered(t.Context(), hostA, up)))
	require.NoError(t, errOf(b.HostAnswered(t.Context(), hostA, up.Add(time.Second))))
	require.NoError(t, errOf(b.HostAnswered(t.Context(), "never.example:443", up.Add(time.Second))))
	recs = heraldEvents(t, b)
	require.Equal(t, []string{store.KindHostDown, store.KindHostUnavailable, store.KindHostUp}, eventKinds(recs), "up once; a host never seen tells nothing")
	require.Equal(t, store.OperationalEvent{Kind: store.KindHostUp, Host: hostA, At: up}, payload(t, recs[2]), "up at the answer")
}

func testResetByAnOperator(t *testing.T, b Backend) {
	downHost(t, b, 2, at(0))
	require.ErrorIs(t, errOf(b.ResetHost(t.Context(), "unknown.example:443", at(5))), journal.ErrNotFound)
	h, err := b.ResetHost(t.Context(), hostA, at(30))
	require.NoError(t, err)
	require.Equal(t, store.HostUp, h.State)
	requireTime(t, at(30), h.Since, "up since the reset")
	require.Equal(t, "dial: connection refused", h.LastError, "the last error stays, as history")
	batch := due(t, b, "webhook", "after-reset", at(600), 100)
	require.ElementsMatch(t, []string{"s/a0", "s/a1", "s/b"}, keys(batch.Registrations))
	recs := heraldEvents(t, b)
	require.Equal(t, []string{store.KindHostDown, store.KindHostUp}, eventKinds(recs), "an operator's reset is an up too")
	requireTime(t, at(30), payload(t, recs[1]).At, "up at the reset")
}

func testBadHostInputChangesNothing(t *testing.T, b Backend) {
	streamWithReg(t, b, 1, onHost("s", "r", hostA))
	st := due(t, b, "webhook", "w", at(0), 1).Registrations[0]
	good := store.HostFailure{Claim: st.Claim(), NextSeq: 1, Host: hostA, Evidence: store.Evidence{At: at(0), Error: "x"}, Horizon: horizon}
	for i, bad := range []func(f *store.HostFailure){
		func(f *store.HostFailure) { f.Host = "" },
		func(f *store.HostFailure) { f.Horizon = time.Second },
		func(f *store.HostFailure) { f.Evidence.At = time.Time{} },
		func(f *store.HostFailure) { f.Claim.Owner = "" },
		func(f *store.HostFailure) { f.NextSeq = 5 },
	} {
		f := good
		bad(&f)
		require.ErrorIs(t, errOf(b.HostFailed(t.Context(), f)), journal.ErrInvalid, "case %d", i)
	}
	for name, err := range map[string]error{
		"answer of no host":    errOf(b.HostAnswered(t.Context(), "", at(0))),
		"answer at zero":       errOf(b.HostAnswered(t.Context(), hostA, time.Time{})),
		"reset of no host":     errOf(b.ResetHost(t.Context(), "", at(0))),
		"hosts in a bad state": errOf(b.Hosts(t.Context(), store.HostQuery{State: "sideways"})),
		"hosts limit -1":       errOf(b.Hosts(t.Context(), store.HostQuery{Limit: -1})),
	} {
		require.ErrorIs(t, err, journal.ErrInvalid, name)
	}
	require.Empty(t, hosts(t, b, store.HostQuery{}), "bad input stored no host")
	require.Equal(t, "w", get(t, b, "s", "r").LeaseOwner, "and released no lease")
}

func testAPathThatNeverAnswersBacksOffWhileItsHostAnswers(t *testing.T, b Backend) {
	streamWithReg(t, b, 2, onHost("s", "r", hostA))
	when := at(0)
	for k := 1; k <= 6; k++ {
		st := due(t, b, "webhook", fmt.Sprintf("w%d", k), when, 1).Registrations[0]
		require.Equal(t, store.HostUp, hostFail(t, b, st, when).State, "failure %d: another path's answer came between each", k)
		require.NoError(t, errOf(b.HostAnswered(t.Context(), hostA, when)))
		got := get(t, b, "s", "r")
		require.Equal(t, k, got.HostFailures)
		require.Zero(t, got.Attempts)
		requireTime(t, store.HostRetryAt("s", "r", k, when), got.NextAttemptAt, fmt.Sprintf("failure %d backs off on the registration's own count", k))
		when = got.NextAttemptAt
	}

	// An answer about the record resets the count (a charged failure); an
	// advance does too.
	st := due(t, b, "webhook", "answer", when, 1).Registrations[0]
	require.NoError(t, b.Retry(t.Context(), st.Claim(), 1, when.Add(time.Second), store.Evidence{At: when, Error: "500"}))
	got := get(t, b, "s", "r")
	require.Zero(t, got.HostFailures)
	require.Equal(t, 1, got.Attempts)
	st = due(t, b, "webhook", "again", when.Add(time.Second), 1).Registrations[0]
	hostFail(t, b, st, when.Add(time.Second))
	require.Equal(t, 1, get(t, b, "s", "r").HostFailures)
	st = due(t, b, "webhook", "advance", when.Add(time.Hour), 1).Registrations[0]
	require.NoError(t, b.Advance(t.Context(), st.Claim(), 2))
	require.Zero(t, get(t, b, "s", "r").HostFailures, "an advance resets it")
}
