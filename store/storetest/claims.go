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
// attempt first, within the per-host cap.
var dueTests = []test{
	testOnlyRegistrationsWithWork, testLimitAndSaturation, testLeaseIsExclusiveUntilExpiry,
	testOldestAttemptFirst, testBadDueQueryChangesNothing, testSaturationStarvesNoOne,
	testConcurrentClaimsAreExclusive, testPerHostCap, testOldestFirstPastHostsAtTheirCap, testHostFollowsTheURL,
	testRenewExtendsOnlyLeasesStillHeld,
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
