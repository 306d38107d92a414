package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

var hostTests = []test{
	{"FailureChargesTheHostNotTheRegistration", testHostFailureNoAttempt},
	{"DownAfterAFewInARowHoldsItsRegistrations", testHostDownHolds},
	{"OneProbePerWindowAtPinnedInstants", testHostProbes},
	{"TwoClaimersRacingAProbeGetOne", testHostProbeRace},
	{"AnAnswerReleasesEveryRegistration", testHostAnswerReleases},
	{"UnavailablePastTheHorizon", testHostUnavailable},
	{"ResetByAnOperator", testHostReset},
	{"StaleClaimChangesNothing", testHostFenced},
	{"APathThatNeverAnswersBacksOffWhileItsHostAnswers", testHostPathBackoff},
	{"BadInputChangesNothing", testHostBadInput},
}

// The hosts of the suite's registrations, in push.HostOf form.
const (
	hostA = "a.example:443"
	hostB = "b.example:443"
)

// policy is the suite's: the shortest horizon, so that the way to it is short.
var policy = push.HostPolicy{DownAfter: 3, Horizon: push.MinHostHorizon}

func hostStore(t *testing.T, b Backend) push.HostStore {
	t.Helper()
	hs, ok := b.(push.HostStore)
	require.True(t, ok, "%T does not implement push.HostStore: every store keeps host health", b)
	return hs
}

// onHost is a webhook registration whose URL is on host (":443" form).
func onHost(stream, id, host string) push.Registration {
	return regAt(stream, id, "webhook", "https://"+host[:len(host)-len(":443")]+"/inbox/"+id)
}

// hostFail records a host-level failure of the claimed registration st at when.
func hostFail(t *testing.T, hs push.HostStore, st push.Status, when time.Time) push.Host {
	t.Helper()
	h, err := hs.HostFailed(ctx(t), push.HostFailure{Claim: st.Claim(), NextSeq: st.NextSeq, Host: push.HostOf(st.URL),
		Evidence: push.Evidence{At: when, Seq: st.NextSeq, Error: "dial: connection refused"}, Policy: policy})
	require.NoError(t, err)
	return h
}

func hosts(t *testing.T, hs push.HostStore, q push.HostQuery) []push.Host {
	t.Helper()
	list, err := hs.Hosts(ctx(t), q)
	require.NoError(t, err)
	return list
}

func oneHost(t *testing.T, hs push.HostStore, host string) push.Host {
	t.Helper()
	list := hosts(t, hs, push.HostQuery{Host: host})
	require.Len(t, list, 1, "host %s is stored", host)
	return list[0]
}

// dueOn claims (as owner) what is due at when and returns the claims of
// host's registrations; it releases the others untouched.
func dueOn(t *testing.T, b Backend, host, owner string, when time.Time) []push.Status {
	t.Helper()
	var on []push.Status
	for _, st := range due(t, b, "webhook", owner, when, 100).Registrations {
		if push.HostOf(st.URL) == host {
			on = append(on, st)
		} else {
			require.NoError(t, b.Advance(ctx(t), st.Claim(), st.NextSeq))
		}
	}
	return on
}

// downHost registers n registrations on hostA (with a record each) and one
// on hostB, and brings hostA down with policy.DownAfter failures of its
// registrations, at when, when+10s and when+20s: down since when+20s.
func downHost(t *testing.T, b Backend, n int, when time.Time) push.Host {
	t.Helper()
	hs := hostStore(t, b)
	appendN(t, b, "s", 1)
	for i := range n {
		register(t, b, onHost("s", fmt.Sprintf("a%d", i), hostA))
	}
	register(t, b, onHost("s", "b", hostB))
	var h push.Host
	for i := range policy.DownAfter {
		when := when.Add(time.Duration(i) * 10 * time.Second)
		on := dueOn(t, b, hostA, fmt.Sprintf("down-%d", i), when)
		require.NotEmpty(t, on, "failure %d: a registration of %s was claimed", i+1, hostA)
		h = hostFail(t, hs, on[0], when)
		for _, st := range on[1:] {
			require.NoError(t, b.Advance(ctx(t), st.Claim(), st.NextSeq))
		}
	}
	return h
}

// untilUnavailable fails every probe of down hostA from h's next on, and
// returns the host unavailable and the instant of the probe that made it so.
func untilUnavailable(t *testing.T, b Backend, h push.Host) (push.Host, time.Time) {
	t.Helper()
	hs, when := hostStore(t, b), h.NextProbeAt
	for i := 0; i < 1000 && h.State == push.HostDown; i++ {
		for _, st := range dueOn(t, b, hostA, fmt.Sprintf("p%d", i), when) {
			h = hostFail(t, hs, st, when)
		}
		if h.State == push.HostDown {
			when = oneHost(t, hs, hostA).NextProbeAt
		}
	}
	require.Equal(t, push.HostUnavailable, h.State, "down past the horizon: unavailable")
	return h, when
}

func testHostFailureNoAttempt(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	appendN(t, b, "s", 3)
	register(t, b, onHost("s", "r", hostA))
	st := due(t, b, "webhook", "w", at(0), 1).Registrations[0]
	h, err := hs.HostFailed(ctx(t), push.HostFailure{Claim: st.Claim(), NextSeq: 2, Host: hostA,
		Evidence: push.Evidence{At: at(0), Seq: 2, Error: "timeout: no answer within 15s\x00\xff"}, Policy: policy})
	require.NoError(t, err)
	require.Equal(t, push.HostUp, h.State, "one failure does not make a host down")
	require.Equal(t, 1, h.Failures)
	require.Equal(t, hostA, h.Host)
	require.NotContains(t, h.LastError, "\x00", "a receiver's text is cleaned before it is stored")

	got := regIs(t, b, "s", "r", 2, 0, "", "a host-level failure charges the registration no attempt, keeps the progress before it and releases the lease")
	require.Equal(t, 1, got.HostFailures, "the registration counts its host-level failures, for its backoff")
	requireTime(t, push.HostRetryAt("s", "r", 1, at(0)), got.NextAttemptAt, "next attempt")
	evs := evidence(t, b, "s", "r")
	require.Len(t, evs, 1)
	require.Equal(t, push.EventHostFailed, evs[0].Event)
	require.Zero(t, evs[0].Attempt, "no attempt was charged")
	requireTime(t, got.NextAttemptAt, evs[0].NotBefore, "evidence says when it is tried again")

	// Many host-level failures never park it (a retry ceiling of 1 would).
	for i := 1; i <= 10; i++ {
		when := at(i * 1000)
		batch := due(t, b, "webhook", fmt.Sprintf("w%d", i), when, 1)
		if len(batch.Registrations) == 0 {
			continue // held: its host is down and no probe is due
		}
		hostFail(t, hs, batch.Registrations[0], when)
	}
	got = get(t, b, "s", "r")
	require.False(t, got.Parked)
	require.Zero(t, got.Attempts)
}

func testHostDownHolds(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	h := downHost(t, b, 3, at(0))
	require.Equal(t, push.HostDown, h.State)
	require.Equal(t, 3, h.Failures)
	requireTime(t, at(20), h.Since, "down since the failure that made it so")
	requireTime(t, at(20).Add(push.ProbeDelay(hostA, 0)), h.NextProbeAt, "first probe")

	stored := oneHost(t, hs, hostA)
	require.Equal(t, push.HostDown, stored.State)
	require.Equal(t, 3, stored.Held, "its three registrations with work are held")
	requireTime(t, h.NextProbeAt, stored.NextProbeAt, "stored probe instant")

	// Until the probe instant nothing of hostA is claimed, hostB's is.
	batch := due(t, b, "webhook", "w", h.NextProbeAt.Add(-time.Second), 100)
	require.Equal(t, []string{"s/b"}, keys(batch.Registrations), "a down host's registrations are held")
	st := get(t, b, "s", "a0")
	require.Zero(t, st.Attempts, "held: not charged")
	require.False(t, st.Parked, "held: not parked")

	// A new registration of the down host is held too.
	register(t, b, onHost("s", "a-new", hostA))
	require.Equal(t, 4, oneHost(t, hs, hostA).Held)
}

func testHostProbes(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	probeAt := downHost(t, b, 3, at(0)).NextProbeAt
	for n := 1; n <= 4; n++ {
		probes := dueOn(t, b, hostA, fmt.Sprintf("p%d", n), probeAt)
		require.Len(t, probes, 1, "probe %d: exactly one registration of the down host goes through", n)
		for _, st := range due(t, b, "webhook", fmt.Sprintf("p%d-again", n), probeAt, 100).Registrations {
			require.NotEqual(t, hostA, push.HostOf(st.URL), "probe %d: the probe instant moved with the claim", n)
		}
		stored := oneHost(t, hs, hostA)
		requireTime(t, probeAt.Add(push.ProbeDelay(hostA, n)), stored.NextProbeAt, fmt.Sprintf("probe %d moves the next", n))
		require.Equal(t, n, stored.Probes)
		failed := hostFail(t, hs, probes[0], probeAt)
		require.Equal(t, push.HostDown, failed.State, "a failed probe keeps it down")
		requireTime(t, stored.NextProbeAt, failed.NextProbeAt, "a failed probe does not move the probe instant again")
		probeAt = failed.NextProbeAt
	}
	// The schedule is the formula's, pinned (push's tests pin ProbeDelay).
	require.Equal(t, push.Backoff(hostA, "probe", 3), push.ProbeDelay(hostA, 0))
}

func testHostProbeRace(t *testing.T, b Backend) {
	h := downHost(t, b, 6, at(0))
	var (
		mu     sync.Mutex
		probes int
	)
	race(t, 8, func(i int) error {
		batch, err := b.Due(ctx(t), push.DueQuery{At: h.NextProbeAt, Limit: 100, Namespace: "webhook",
			Owner: fmt.Sprintf("racer-%d", i), LeaseUntil: h.NextProbeAt.Add(time.Minute)})
		mu.Lock()
		defer mu.Unlock()
		for _, st := range batch.Registrations {
			if push.HostOf(st.URL) == hostA {
				probes++
			}
		}
		return err
	})
	require.Equal(t, 1, probes, "eight claimers at the probe instant: one probe")
}

func testHostAnswerReleases(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	h := downHost(t, b, 3, at(0))
	batch := due(t, b, "webhook", "probe", h.NextProbeAt, 100)
	require.Equal(t, push.HostDown, oneHost(t, hs, hostA).State)
	for _, st := range batch.Registrations {
		require.NoError(t, b.Advance(ctx(t), st.Claim(), st.NextSeq))
	}
	troubled := false
	for _, th := range batch.Hosts {
		troubled = troubled || th.Host == hostA
	}
	require.True(t, troubled, "Due tells the worker that the probe's host is troubled")

	up, err := hs.HostAnswered(ctx(t), hostA, h.NextProbeAt)
	require.NoError(t, err)
	require.Equal(t, push.HostUp, up.State)
	require.Zero(t, up.Failures)
	require.True(t, up.NextProbeAt.IsZero())
	requireTime(t, h.NextProbeAt, up.Since, "up since the answer")
	require.Zero(t, oneHost(t, hs, hostA).Held)

	later := h.NextProbeAt.Add(time.Hour)
	all := due(t, b, "webhook", "released", later, 100)
	require.ElementsMatch(t, []string{"s/a0", "s/a1", "s/a2", "s/b"}, keys(all.Registrations), "every held registration is released at once")
	require.Empty(t, all.Hosts, "a host in good health is not reported")
	for _, id := range []string{"a0", "a1", "a2"} {
		require.Zero(t, get(t, b, "s", id).Attempts)
	}

	// An answer from a host never stored stores nothing.
	fresh, err := hs.HostAnswered(ctx(t), "never.example:443", later)
	require.NoError(t, err)
	require.Equal(t, push.HostUp, fresh.State)
	require.Empty(t, hosts(t, hs, push.HostQuery{Host: "never.example:443"}))
}

func testHostUnavailable(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	down := downHost(t, b, 2, at(0))
	h, when := untilUnavailable(t, b, down)
	require.False(t, when.Before(down.Since.Add(policy.Horizon)), "not before the horizon")
	requireTime(t, when, h.Since, "unavailable since the failure past the horizon")
	requireTime(t, when.Add(push.UnavailableProbeInterval), h.NextProbeAt, "probes slow to the longest interval")
	require.Equal(t, 2, oneHost(t, hs, hostA).Held, "its registrations are held, for that reason")
	require.Len(t, hosts(t, hs, push.HostQuery{State: push.HostUnavailable}), 1)

	// The next probe is an hour on, then every hour.
	require.Len(t, dueOn(t, b, hostA, "hourly", h.NextProbeAt), 1)
	requireTime(t, h.NextProbeAt.Add(push.UnavailableProbeInterval), oneHost(t, hs, hostA).NextProbeAt, "hourly")
	for _, id := range []string{"a0", "a1"} {
		st := get(t, b, "s", id)
		require.False(t, st.Parked, "nothing is parked because a host was down")
		require.Zero(t, st.Attempts)
	}
}

func testHostReset(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	downHost(t, b, 2, at(0))
	require.ErrorIs(t, errOf(hs.ResetHost(ctx(t), "unknown.example:443", at(5))), journal.ErrNotFound)
	h, err := hs.ResetHost(ctx(t), hostA, at(30))
	require.NoError(t, err)
	require.Equal(t, push.HostUp, h.State)
	requireTime(t, at(30), h.Since, "up since the reset")
	require.Equal(t, "dial: connection refused", h.LastError, "the last error stays, as history")
	batch := due(t, b, "webhook", "after-reset", at(600), 100)
	require.ElementsMatch(t, []string{"s/a0", "s/a1", "s/b"}, keys(batch.Registrations))
	recs := heraldEvents(t, b)
	require.Equal(t, []string{push.KindHostDown, push.KindHostUp}, eventKinds(recs), "an operator's reset is an up too")
	requireTime(t, at(30), payload(t, recs[1]).At, "up at the reset")
}

func testHostFenced(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	appendN(t, b, "s", 1)
	register(t, b, onHost("s", "r", hostA))
	stale := due(t, b, "webhook", "A", at(0), 1).Registrations[0]
	due(t, b, "webhook", "B", at(60), 1) // A's lease expired: B holds it
	_, err := hs.HostFailed(ctx(t), push.HostFailure{Claim: stale.Claim(), NextSeq: 1, Host: hostA,
		Evidence: push.Evidence{At: at(61), Error: "stale"}, Policy: policy})
	require.ErrorIs(t, err, push.ErrLeaseLost)
	require.Empty(t, hosts(t, hs, push.HostQuery{}), "a fenced failure counts nothing against the host")
	require.Equal(t, "B", get(t, b, "s", "r").LeaseOwner)
}

func testHostBadInput(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	appendN(t, b, "s", 1)
	register(t, b, onHost("s", "r", hostA))
	st := due(t, b, "webhook", "w", at(0), 1).Registrations[0]
	good := push.HostFailure{Claim: st.Claim(), NextSeq: 1, Host: hostA, Evidence: push.Evidence{At: at(0), Error: "x"}, Policy: policy}
	bad := []func(f *push.HostFailure){
		func(f *push.HostFailure) { f.Host = "" },
		func(f *push.HostFailure) { f.Policy.DownAfter = 0 },
		func(f *push.HostFailure) { f.Policy.Horizon = time.Second },
		func(f *push.HostFailure) { f.Evidence.At = time.Time{} },
		func(f *push.HostFailure) { f.Claim.Owner = "" },
		func(f *push.HostFailure) { f.NextSeq = 5 },
	}
	for i, mutate := range bad {
		f := good
		mutate(&f)
		require.ErrorIs(t, errOf(hs.HostFailed(ctx(t), f)), journal.ErrInvalid, "case %d", i)
	}
	for name, err := range map[string]error{
		"answer of no host":    errOf(hs.HostAnswered(ctx(t), "", at(0))),
		"answer at zero":       errOf(hs.HostAnswered(ctx(t), hostA, time.Time{})),
		"reset of no host":     errOf(hs.ResetHost(ctx(t), "", at(0))),
		"hosts in a bad state": errOf(hs.Hosts(ctx(t), push.HostQuery{State: "sideways"})),
		"hosts limit -1":       errOf(hs.Hosts(ctx(t), push.HostQuery{Limit: -1})),
	} {
		require.ErrorIs(t, err, journal.ErrInvalid, name)
	}
	require.Empty(t, hosts(t, hs, push.HostQuery{}), "bad input stored no host")
	require.Equal(t, "w", get(t, b, "s", "r").LeaseOwner, "and released no lease")
}

func testHostPathBackoff(t *testing.T, b Backend) {
	hs := hostStore(t, b)
	appendN(t, b, "s", 2)
	register(t, b, onHost("s", "r", hostA))
	when := at(0)
	for k := 1; k <= 6; k++ {
		st := due(t, b, "webhook", fmt.Sprintf("w%d", k), when, 1).Registrations[0]
		h := hostFail(t, hs, st, when)
		require.Equal(t, push.HostUp, h.State, "failure %d: another path's answer came between each", k)
		require.NoError(t, errOf(hs.HostAnswered(ctx(t), hostA, when)))
		got := get(t, b, "s", "r")
		require.Equal(t, k, got.HostFailures)
		require.Zero(t, got.Attempts)
		requireTime(t, push.HostRetryAt("s", "r", k, when), got.NextAttemptAt, fmt.Sprintf("failure %d backs off on the registration's own count", k))
		when = got.NextAttemptAt
	}

	// An answer about the record resets the count (a charged failure); an
	// advance does too.
	st := due(t, b, "webhook", "answer", when, 1).Registrations[0]
	require.NoError(t, b.Retry(ctx(t), st.Claim(), 1, when.Add(time.Second), push.Evidence{At: when, Error: "500"}))
	got := get(t, b, "s", "r")
	require.Zero(t, got.HostFailures)
	require.Equal(t, 1, got.Attempts)
	st = due(t, b, "webhook", "again", when.Add(time.Second), 1).Registrations[0]
	hostFail(t, hs, st, when.Add(time.Second))
	require.Equal(t, 1, get(t, b, "s", "r").HostFailures)
	st = due(t, b, "webhook", "advance", when.Add(time.Hour), 1).Registrations[0]
	require.NoError(t, b.Advance(ctx(t), st.Claim(), 2))
	require.Zero(t, get(t, b, "s", "r").HostFailures, "an advance resets it")
}
