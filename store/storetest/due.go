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

var dueTests = []test{
	{"OnlyRegistrationsWithWork", testDueFiltering},
	{"LimitAndSaturation", testDueLimit},
	{"LeaseIsExclusiveUntilExpiry", testLease},
	{"OldestAttemptFirst", testDueOrder},
	{"BadQueryChangesNothing", testDueBadInput},
	{"SaturationStarvesNoOne", testDueRotates},
	{"ConcurrentClaimsAreExclusive", testConcurrentDue},
	{"PerHostCap", testDuePerHost},
	{"HostFollowsTheURL", testDueHostFollowsURL},
}

func testDueFiltering(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	register(t, b, reg("s", "due", "webhook"))
	register(t, b, regFrom("s", "at-head", "webhook", 4))
	register(t, b, reg("s", "parked", "webhook"))
	require.NoError(t, b.Park(ctx(t), claim(t, b, "s", "parked", at(0)), 1, push.Evidence{At: at(0), Error: "410 Gone"}))
	register(t, b, reg("s", "later", "webhook"))
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "later", at(0)), 1, at(30), push.Evidence{At: at(0), Error: "503"}))
	register(t, b, reg("s", "other-ns-1", "cloudevents"))
	register(t, b, reg("s", "other-ns-2", "a2a"))
	register(t, b, reg("empty-stream", "nothing-yet", "webhook"))

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

	require.NoError(t, errOf(b.Append(ctx(t), "s", entry("new"))))
	batch = due(t, b, "webhook", "w2", at(200), 100)
	require.ElementsMatch(t, []string{"s/due", "s/later", "s/at-head"}, keys(batch.Registrations),
		"an append makes a registration at the head due; expired leases are claimable")

	require.NoError(t, errOf(b.Append(ctx(t), "empty-stream", entry("first"))))
	batch = due(t, b, "webhook", "w3", at(200), 100)
	require.Equal(t, []string{"empty-stream/nothing-yet"}, keys(batch.Registrations))
}

func testDueLimit(t *testing.T, b Backend) {
	streamWithRegs(t, b, 1, 5)
	first := due(t, b, "webhook", "w1", at(0), 2)
	require.Len(t, first.Registrations, 2)
	require.True(t, first.More, "more than the limit were due")
	second := due(t, b, "webhook", "w2", at(0), 2)
	require.Len(t, second.Registrations, 2)
	require.True(t, second.More)
	third := due(t, b, "webhook", "w3", at(0), 2)
	require.Len(t, third.Registrations, 1)
	require.False(t, third.More, "the extra row looked for is not claimed")
	all := append(append(keys(first.Registrations), keys(second.Registrations)...), keys(third.Registrations)...)
	require.ElementsMatch(t, []string{"s/r0", "s/r1", "s/r2", "s/r3", "s/r4"}, all, "each registration claimed once")

	require.Empty(t, due(t, b, "webhook", "w4", at(1), 10).Registrations, "all leased")
}

func testLease(t *testing.T, b Backend) {
	streamWithReg(t, b, 2)
	require.Len(t, due(t, b, "webhook", "A", at(0), 10).Registrations, 1)
	require.Empty(t, due(t, b, "webhook", "B", at(0), 10).Registrations, "a live lease hides it from B")
	require.Empty(t, due(t, b, "webhook", "A", at(59), 10).Registrations, "and from A itself, until it expires")
	got := due(t, b, "webhook", "B", at(60), 10)
	require.Equal(t, []string{"s/r"}, keys(got.Registrations), "expired at LeaseUntil: B may claim it")
	require.Equal(t, "B", got.Registrations[0].LeaseOwner)

	// Advance releases the lease: due again at once while there is work.
	require.NoError(t, b.Advance(ctx(t), got.Registrations[0].Claim(), 2))
	st := get(t, b, "s", "r")
	require.Empty(t, st.LeaseOwner)
	require.True(t, st.LeaseUntil.IsZero())
	again := due(t, b, "webhook", "A", at(61), 10)
	require.Equal(t, []string{"s/r"}, keys(again.Registrations))
	require.NoError(t, b.Advance(ctx(t), again.Registrations[0].Claim(), 3))
	require.Empty(t, due(t, b, "webhook", "A", at(62), 10).Registrations, "at the head: idle, not due")
}

func testDueOrder(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	for i, wait := range []int{30, 10, 20} {
		id := fmt.Sprintf("r%d", i)
		register(t, b, reg("s", id, "webhook"))
		require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", id, at(0)), 1, at(wait), push.Evidence{At: at(0), Error: "503"}))
	}
	batch := due(t, b, "webhook", "w", at(100), 3)
	require.Equal(t, []string{"s/r1", "s/r2", "s/r0"}, keys(batch.Registrations), "the longest-waiting first")
}

func testDueBadInput(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	good := push.DueQuery{At: at(0), Limit: 10, Namespace: "webhook", Owner: "w", LeaseUntil: at(60)}
	with := func(f func(q *push.DueQuery)) push.DueQuery { q := good; f(&q); return q }
	cases := map[string]push.DueQuery{
		"limit 0":               with(func(q *push.DueQuery) { q.Limit = 0 }),
		"negative limit":        with(func(q *push.DueQuery) { q.Limit = -1 }),
		"zero at":               with(func(q *push.DueQuery) { q.At = time.Time{} }),
		"empty owner":           with(func(q *push.DueQuery) { q.Owner = "" }),
		"lease ending at once":  with(func(q *push.DueQuery) { q.LeaseUntil = q.At }),
		"bad namespace":         with(func(q *push.DueQuery) { q.Namespace = "Web Hook" }),
		"negative per-host cap": with(func(q *push.DueQuery) { q.MaxPerHost = -1 }),
		"negative busy count": with(func(q *push.DueQuery) {
			q.MaxPerHost, q.Busy = 2, map[string]int{"receiver.example:443": -1}
		}),
	}
	for name, q := range cases {
		require.ErrorIs(t, errOf(b.Due(ctx(t), q)), journal.ErrInvalid, name)
	}
	require.Empty(t, get(t, b, "s", "r").LeaseOwner, "no lease was taken")
}

func testDueRotates(t *testing.T, b Backend) {
	streamWithRegs(t, b, 50, 3)
	served := map[string]int{}
	for i := range 6 {
		batch := due(t, b, "webhook", fmt.Sprintf("w%d", i), at(i), 2)
		require.Len(t, batch.Registrations, 2)
		for _, st := range batch.Registrations {
			served[st.ID]++
			requireTime(t, at(i), st.NextAttemptAt, "Due stamps the claim's instant")
			require.NoError(t, b.Advance(ctx(t), st.Claim(), st.NextSeq+1)) // one record; work remains
		}
	}
	// Least recently claimed first: with 3 due and room for 2, nobody waits
	// more than one sweep (ties between equal instants may go either way).
	for _, id := range []string{"r0", "r1", "r2"} {
		require.GreaterOrEqual(t, served[id], 3, "%s was served %d times in 6 saturated sweeps: %v", id, served[id], served)
	}
}

func testConcurrentDue(t *testing.T, b Backend) {
	streamWithRegs(t, b, 1, 20)
	var (
		mu     sync.Mutex
		claims = map[string]int{}
	)
	race(t, 8, func(w int) error {
		batch, err := b.Due(ctx(t), push.DueQuery{At: at(0), Limit: 5, Namespace: "webhook", Owner: fmt.Sprintf("w%d", w), LeaseUntil: at(60)})
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys(batch.Registrations) {
			claims[k]++
		}
		return err
	})
	require.Len(t, claims, 20, "all 20 were claimed")
	for k, n := range claims {
		require.Equal(t, 1, n, "%s claimed by %d workers under one live lease", k, n)
	}
}

// regAt is reg with the URL on a host of its own.
func regAt(stream, id, ns, url string) push.Registration {
	r := reg(stream, id, ns)
	r.URL = url
	return r
}

func dueCapped(t *testing.T, b Backend, owner string, when time.Time, limit, perHost int, busy map[string]int) push.DueBatch {
	t.Helper()
	batch, err := b.Due(ctx(t), push.DueQuery{At: when, Limit: limit, Namespace: "webhook", Owner: owner,
		LeaseUntil: when.Add(time.Minute), MaxPerHost: perHost, Busy: busy})
	require.NoError(t, err)
	return batch
}

func hostCounts(sts []push.Status) map[string]int {
	out := map[string]int{}
	for _, s := range sts {
		out[s.Host()]++
	}
	return out
}

func testDuePerHost(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	// Five registrations on one host, written three ways; two on another.
	for i, u := range []string{"https://big.example/a", "https://BIG.example:443/b", "https://big.example/c?x=1",
		"https://big.example/d", "https://big.example/e"} {
		register(t, b, regAt("s", fmt.Sprintf("big%d", i), "webhook", u))
	}
	register(t, b, regAt("s", "small0", "webhook", "http://127.0.0.2:8080/in"))
	register(t, b, regAt("s", "small1", "webhook", "http://127.0.0.2:8080/in2"))
	const big, small = "big.example:443", "127.0.0.2:8080"

	batch := dueCapped(t, b, "w1", at(0), 10, 2, map[string]int{big: 1})
	require.Equal(t, map[string]int{big: 1, small: 2}, hostCounts(batch.Registrations),
		"a host gets MaxPerHost minus what is busy; the same host however its URL is written")
	require.False(t, batch.More, "registrations left out by the cap do not count as More")

	batch = dueCapped(t, b, "w2", at(0), 10, 2, map[string]int{big: 2})
	require.Empty(t, batch.Registrations, "a host at its cap gets nothing (the other host's are leased)")
	require.False(t, batch.More)

	batch = dueCapped(t, b, "w3", at(0), 1, 3, nil)
	require.Equal(t, map[string]int{big: 1}, hostCounts(batch.Registrations))
	require.True(t, batch.More, "room left under the cap beyond the limit is More")

	batch = dueCapped(t, b, "w4", at(0), 10, 0, map[string]int{big: 100})
	require.Equal(t, map[string]int{big: 3}, hostCounts(batch.Registrations),
		"MaxPerHost 0 is no cap: Busy is ignored, and every due registration left is claimed")
}

func testDueHostFollowsURL(t *testing.T, b Backend) {
	appendN(t, b, "s", 1)
	register(t, b, regAt("s", "r", "webhook", "https://old.example/in"))
	register(t, b, regAt("s", "r", "webhook", "https://new.example/in")) // an update of the destination
	batch := dueCapped(t, b, "w", at(0), 10, 1, map[string]int{"old.example:443": 0, "new.example:443": 1})
	require.Empty(t, batch.Registrations, "the cap is counted against the host of the current URL")
	batch = dueCapped(t, b, "w", at(0), 10, 1, map[string]int{"old.example:443": 1})
	require.Equal(t, []string{"s/r"}, keys(batch.Registrations))
}
