package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Host health, which holds a down host's registrations but for one probe at
// a time, and what a host's row keeps beside it.
var hostTests = []test{
	testFailureChargesTheHostNotTheRegistration, testDownAfterAFewInARowHoldsItsRegistrations, testAHeldRegistrationWaitsForItsHostsProbe,
	testOneProbePerWindowAtPinnedInstants, testTwoClaimersRacingAProbeGetOne,
	testAnAnswerReleasesEveryRegistration, testUnavailablePastTheHorizonEachChangeToldOnce,
	testResetByAnOperator, testAPathThatNeverAnswersBacksOffWhileItsHostAnswers,
	testBadHostInputChangesNothing, testAHostWithNoRegistrationAndNoFailureForTheRetentionAgeIsRemoved,
	testAHostsSchemeIsKeptOnItsRowBesideItsHealth, testMovedToAnotherHostItIsDueAtOnce,
}

// testMovedToAnotherHostItIsDueAtOnce: a registration waiting for its host
// (a host-level failure) and then registered at a URL on another host no
// longer waits for the old one: due at once, its host failures 0. A move
// within its host, and a retry of its own, keep their wait.
func testMovedToAnotherHostItIsDueAtOnce(t *testing.T, b Backend) {
	streamWithReg(t, b, 3, onHost("s", "r", hostA))
	hostFail(t, b, due(t, b, "webhook", "w", at(0), 1).Registrations[0], at(0))
	held := get(t, b, "s", "r")
	require.Equal(t, 1, held.HostFailures)
	before := held.NextAttemptAt.Add(-time.Microsecond)
	require.Empty(t, due(t, b, "webhook", "w", before, 1).Registrations, "it waits for its host")

	path := onHost("s", "r", hostA)
	path.URL += "/elsewhere"
	requireTime(t, held.NextAttemptAt, register(t, b, path).NextAttemptAt, "a path on the same host keeps the wait")
	require.Equal(t, 1, get(t, b, "s", "r").HostFailures)

	register(t, b, onHost("s", "r", hostB))
	require.Zero(t, get(t, b, "s", "r").HostFailures, "what the old host held went")
	batch := due(t, b, "webhook", "w", before, 1)
	require.Equal(t, []string{"s/r"}, keys(batch.Registrations), "due at once on its new host")

	require.NoError(t, b.Retry(t.Context(), batch.Registrations[0].Claim(), 1, at(500), fail503(before)))
	requireTime(t, at(500), register(t, b, onHost("s", "r", hostA)).NextAttemptAt, "a retry of its own is kept")

	if _, ok := b.(store.Subscriber); !ok {
		return
	}
	appendN(t, b, "m/1", 1)
	onA := sub("m/", "h")
	onA.URL = "https://" + hostA[:len(hostA)-len(":443")] + "/inbox"
	subscribe(t, b, onA)
	hostFail(t, b, due(t, b, "webhook", "w", at(1000), 1).Registrations[0], at(1000))
	held = get(t, b, "m/1", "h")
	require.Equal(t, 1, held.HostFailures)
	before = held.NextAttemptAt.Add(-time.Microsecond)
	onB := onA
	onB.URL = "https://" + hostB[:len(hostB)-len(":443")] + "/inbox"
	subscribe(t, b, onB)
	require.Zero(t, get(t, b, "m/1", "h").HostFailures, "a subscription's move drops what the old host held too")
	require.Equal(t, []string{"m/1/h"}, keys(due(t, b, "webhook", "w", before, 1).Registrations), "due at once on its new host")
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

// testAHostWithNoRegistrationAndNoFailureForTheRetentionAgeIsRemoved:
// per-host state is bounded. Prune removes a host's row once no
// registration is of it and its last failure is older than the retention
// age (a dry run counts it and changes nothing); a host with a
// registration stays however old its failure; a host removed that fails
// again is stored anew.
func testAHostWithNoRegistrationAndNoFailureForTheRetentionAgeIsRemoved(t *testing.T, b Backend) {
	ctx := t.Context()
	const retain = time.Hour
	downHost(t, b, 2, at(0)) // a0, a1 on hostA, down by failures at 0, 10 and 20 s; b on hostB
	on := dueOn(t, b, hostB, "b", at(30))
	require.Len(t, on, 1)
	hostFail(t, b, on[0], at(30))
	stored := func() []string {
		return mapped(hosts(t, b, store.HostQuery{}), func(h store.Host) string { return h.Host })
	}
	pruneAt := func(when time.Time, dry bool) int {
		return pruneAll(t, b, store.PruneQuery{At: when, Retain: retain, DryRun: dry}).Hosts
	}
	require.Equal(t, []string{hostA, hostB}, stored())
	require.Zero(t, pruneAt(at(3600*24), false), "every host has a registration: kept however old its failure")

	require.NoError(t, b.Unregister(ctx, "s", "a0"))
	require.NoError(t, b.Unregister(ctx, "s", "a1"))
	require.Zero(t, pruneAt(at(20).Add(retain-time.Second), false), "hostA failed last within the retention age")
	require.Equal(t, 1, pruneAt(at(20).Add(retain), true), "a dry run counts hostA")
	require.Equal(t, []string{hostA, hostB}, stored(), "and changes nothing")
	require.Equal(t, 1, pruneAt(at(20).Add(retain), false))
	require.Equal(t, []string{hostB}, stored(), "hostA, down with no registration left, is gone")

	require.NoError(t, b.Unregister(ctx, "s", "b"))
	require.Equal(t, 1, pruneAt(at(30).Add(retain), false))
	require.Empty(t, stored())

	register(t, b, onHost("s", "again", hostA))
	on = dueOn(t, b, hostA, "again", at(4000))
	require.Len(t, on, 1)
	h := hostFail(t, b, on[0], at(4000))
	require.Equal(t, store.HostUp, h.State)
	require.Equal(t, 1, h.Failures, "stored anew, its old failures forgotten")
	require.Equal(t, []string{hostA}, stored())
}

// testAHostsSchemeIsKeptOnItsRowBesideItsHealth: store.HostSchemes. A host
// with no row has no scheme; setting one makes the row, up, and every
// reader sees it, Hosts too (herald hosts shows it); setting again replaces it; the host's failures and an
// operator's reset leave it, and it leaves them; bad input changes nothing.
func testAHostsSchemeIsKeptOnItsRowBesideItsHealth(t *testing.T, b Backend) {
	ctx := t.Context()
	scheme, learned, err := b.HostScheme(ctx, hostB)
	require.NoError(t, err)
	require.Empty(t, scheme)
	require.True(t, learned.IsZero())

	require.NoError(t, b.SetHostScheme(ctx, hostB, "cavage", at(5)))
	scheme, learned, err = b.HostScheme(ctx, hostB)
	require.NoError(t, err)
	require.Equal(t, "cavage", scheme)
	require.True(t, learned.Equal(at(5)), "learned at %v, want %v", learned, at(5))
	require.Equal(t, []store.Host{{Host: hostB, State: store.HostUp, Since: at(5), Scheme: "cavage", SchemeAt: at(5)}},
		utcHosts(hosts(t, b, store.HostQuery{})), "the row is made, up, with no failures, and lists its scheme")

	downHost(t, b, 2, at(10)) // hostA down
	require.NoError(t, b.SetHostScheme(ctx, hostA, "rfc9421", at(40)))
	require.NoError(t, b.SetHostScheme(ctx, hostB, "rfc9421", at(50)))
	listed := utcHosts(hosts(t, b, store.HostQuery{}))
	require.Len(t, listed, 2)
	require.Equal(t, store.HostDown, listed[0].State, "setting a scheme leaves the host's health")
	require.Equal(t, store.HostUp, listed[1].State)
	require.Equal(t, []string{"rfc9421", "rfc9421"}, []string{listed[0].Scheme, listed[1].Scheme}, "a host's failures leave its scheme")
	require.Equal(t, at(50), listed[1].SchemeAt, "set again: learned anew")
	_, err = b.ResetHost(ctx, hostA, at(60))
	require.NoError(t, err)
	for host, want := range map[string]string{hostA: "rfc9421", hostB: "rfc9421"} {
		scheme, learned, err = b.HostScheme(ctx, host)
		require.NoError(t, err)
		require.Equal(t, want, scheme, host)
		require.False(t, learned.IsZero())
	}

	for _, bad := range []struct{ host, scheme string }{
		{"", "cavage"}, {hostA, ""}, {hostA, "Cavage"}, {hostA, "rfc 9421"}, {hostA, strings.Repeat("a", store.MaxSchemeBytes+1)},
	} {
		err := b.SetHostScheme(ctx, bad.host, bad.scheme, at(70))
		require.True(t, errors.Is(err, journal.ErrInvalid), "SetHostScheme(%q, %q) = %v", bad.host, bad.scheme, err)
	}
	require.ErrorIs(t, b.SetHostScheme(ctx, hostA, "cavage", time.Time{}), journal.ErrInvalid)
	_, _, err = b.HostScheme(ctx, "")
	require.ErrorIs(t, err, journal.ErrInvalid)
	scheme, _, err = b.HostScheme(ctx, hostA)
	require.NoError(t, err)
	require.Equal(t, "rfc9421", scheme, "bad input changed nothing")
}

// utcHosts drops Held and puts instants in UTC, for comparison.
func utcHosts(hs []store.Host) []store.Host {
	for i := range hs {
		hs[i].Since, hs[i].SchemeAt = hs[i].Since.UTC(), hs[i].SchemeAt.UTC()
	}
	return hs
}
