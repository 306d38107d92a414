package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

var registrationTests = []test{
	testRegisterAndGet, testReregisterKeepsCursor, testRegisterPastSealedStream,
	testBadRegistrationChangesNothing, testUnregister, testListFiltersAndPages, testStats,
	testKindsAndWindowStored, testRetryPolicyStored, testFailingSinceStartsARun,
	testAnUpdateTakesTheLeaseButNotItsEnd,
}

// testAnUpdateTakesTheLeaseButNotItsEnd: an update (a new URL, kinds,
// secret) takes the lease from the turn in flight, whose writes and
// renewals then fail, but keeps the lease's end, so that no claim serves the
// registration under what the update set beside that turn; a subscription's
// update does the same to the registrations it made. The same registration
// or subscription again disturbs no turn.
func testAnUpdateTakesTheLeaseButNotItsEnd(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	a := due(t, b, "webhook", "A", at(0), 1).Registrations[0].Claim() // leased until at(60)
	r := reg("s", "r", "webhook")
	register(t, b, r)
	require.NoError(t, b.Checkpoint(t.Context(), a, 2), "the same registration again leaves the turn its lease")
	same := reg("s", "r", "webhook")
	same.Config = store.Config("{ \"secret\" :\n \"s3cr3t\" }")
	register(t, b, same)
	require.NoError(t, b.Checkpoint(t.Context(), a, 2), "so does its config again in other white space: the same JSON")
	r.Kinds, r.URL = []string{"a.*"}, "https://moved.example/r"
	register(t, b, r)
	require.ErrorIs(t, b.Checkpoint(t.Context(), a, 5), store.ErrLeaseLost, "the turn in flight saves nothing more")
	require.ErrorIs(t, b.Advance(t.Context(), a, 5), store.ErrLeaseLost)
	renewed, err := b.Renew(t.Context(), at(30), []store.Claim{a})
	require.NoError(t, err)
	require.Empty(t, renewed, "nor renews its lease")
	require.Empty(t, due(t, b, "webhook", "B", at(59), 1).Registrations, "the lease's end still holds it")
	batch := due(t, b, "webhook", "B", at(60), 1)
	require.Equal(t, []string{"s/r"}, keys(batch.Registrations), "claimed once that lease ended")
	got := batch.Registrations[0]
	require.Equal(t, uint64(2), got.NextSeq, "at the cursor the update found")
	require.Equal(t, []string{"a.*", "https://moved.example/r"}, append(slices.Clone(got.Kinds), got.URL), "under what the update set")
	require.NoError(t, b.Advance(t.Context(), got.Claim(), 11))

	if _, ok := b.(store.Subscriber); !ok {
		return
	}
	appendN(t, b, "m/1", 3)
	subscribe(t, b, sub("m/", "h"))
	c := due(t, b, "webhook", "C", at(100), 1).Registrations[0].Claim()
	require.Equal(t, "m/1", c.Stream)
	subscribe(t, b, sub("m/", "h"))
	require.NoError(t, b.Checkpoint(t.Context(), c, 2), "the same subscription again leaves the turn its lease")
	changed := sub("m/", "h")
	changed.URL = "https://moved.example/h"
	subscribe(t, b, changed)
	require.ErrorIs(t, b.Advance(t.Context(), c, 3), store.ErrLeaseLost, "a subscription's update takes the lease too")
	require.Empty(t, due(t, b, "webhook", "D", at(159), 1).Registrations, "and keeps its end")
	require.Equal(t, []string{"m/1"}, mapped(due(t, b, "webhook", "D", at(160), 1).Registrations, func(st store.Status) string { return st.Stream }))
}

// testRetryPolicyStored: a registration's retry policy is stored, returned by
// Get, List and Due, and replaced by a re-register; none is the zero policy.
func testRetryPolicyStored(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	r := reg("s", "r", "webhook")
	require.True(t, register(t, b, r).Retry.IsZero(), "no policy: the defaults")
	r.Retry = store.RetryPolicy{Schedule: []time.Duration{5 * time.Second, 5 * time.Minute, 10 * time.Hour}, MaxAttempts: 40, For: 72 * time.Hour}
	require.Equal(t, r.Retry, register(t, b, r).Retry)
	batch := due(t, b, "webhook", "w", at(0), 10)
	require.Len(t, batch.Registrations, 1)
	all := list(t, b, store.ListQuery{Stream: "s"})
	for i, st := range []store.Status{get(t, b, "s", "r"), all[0], batch.Registrations[0]} {
		require.Equal(t, r.Retry, st.Retry, "Get, List and Due (#%d) return the policy the turn retries by", i)
	}
	r.Retry = store.RetryPolicy{Schedule: []time.Duration{0}}
	require.ErrorIs(t, errOf(b.Register(t.Context(), r)), journal.ErrInvalid, "a delay under 1s")
	r.Retry = store.RetryPolicy{For: time.Hour}
	require.Equal(t, r.Retry, register(t, b, r).Retry, "a re-register replaces the policy")
}

// testFailingSinceStartsARun: the first charged failure at a cursor starts a
// run (FailingSince, its instant); later ones keep it; a failure after the
// cursor moved, or after an unpark, starts another.
func testFailingSinceStartsARun(t *testing.T, b Backend) {
	streamWithReg(t, b, 10)
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 1, at(5), fail503(at(0))))
	require.Equal(t, at(0), get(t, b, "s", "r").FailingSince.UTC(), "the run's first failure")
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(5)), 1, at(9), fail503(at(5))))
	require.Equal(t, at(0), get(t, b, "s", "r").FailingSince.UTC(), "a second failure keeps the run's start")
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(9)), 4, at(20), fail503(at(9))))
	st := get(t, b, "s", "r")
	require.Equal(t, 1, st.Attempts)
	require.Equal(t, at(9), st.FailingSince.UTC(), "a failure past a moved cursor starts a run")
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(20)), 4, store.Evidence{At: at(20), Error: "500"}))
	require.Equal(t, at(9), get(t, b, "s", "r").FailingSince.UTC(), "a park ends the run it belongs to")
	require.NoError(t, b.Unpark(t.Context(), "s", "r", at(30)))
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(30)), 4, at(40), fail503(at(30))))
	require.Equal(t, at(30), get(t, b, "s", "r").FailingSince.UTC(), "after an unpark a failure starts a run")
}

// testKindsAndWindowStored: a registration's kind patterns and window are
// stored, returned by Get, List and Due, and replaced by a re-register that
// keeps the cursor; no kinds is every kind (nil), no window 1.
func testKindsAndWindowStored(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	r := reg("s", "r", "webhook")
	require.Equal(t, 1, register(t, b, r).Window, "no window: 1, strict order")
	require.Equal(t, 1, get(t, b, "s", "r").Window)
	r.Kinds, r.Window = []string{"order.*", "invoice.paid"}, 16
	got := register(t, b, r)
	require.Equal(t, r.Kinds, got.Kinds)
	require.Equal(t, 16, got.Window)
	all := list(t, b, store.ListQuery{Stream: "s"})
	require.Len(t, all, 1)
	batch := due(t, b, "webhook", "w", at(0), 10)
	require.Len(t, batch.Registrations, 1)
	seen := []store.Status{get(t, b, "s", "r"), all[0], batch.Registrations[0]}
	for i, st := range seen {
		require.Equal(t, r.Kinds, st.Kinds, "Get, List and Due (#%d) return the kinds the turn filters by", i)
		require.Equal(t, 16, st.Window, "Get, List and Due (#%d) return the window the turn sends with", i)
	}
	require.NoError(t, b.Advance(t.Context(), seen[2].Claim(), 3))

	r.Kinds, r.Window = []string{"refund.*"}, store.MaxWindow
	got = register(t, b, r)
	require.Equal(t, r.Kinds, got.Kinds)
	require.Equal(t, store.MaxWindow, got.Window)
	require.Equal(t, uint64(3), got.NextSeq, "a re-register keeps the cursor")
	require.Equal(t, r.Kinds, get(t, b, "s", "r").Kinds)
	r.Window = store.MaxWindow + 1
	err := errOf(b.Register(t.Context(), r))
	require.ErrorIs(t, err, journal.ErrInvalid)
	require.ErrorContains(t, err, "window")
	require.Equal(t, store.MaxWindow, get(t, b, "s", "r").Window, "a refused register changes nothing")
	r.Kinds, r.Window = nil, 0
	require.Nil(t, register(t, b, r).Kinds)
	require.Nil(t, get(t, b, "s", "r").Kinds, "no kinds: every kind, returned as nil by every store")
}

func testRegisterAndGet(t *testing.T, b Backend) {
	appendN(t, b, "actor/alice", 2)
	r := reg("actor/alice", "https://remote.example/inbox", "activitypub")
	r.OnRejected = store.RejectSkip
	// A new registration's state is its own, whatever r says.
	r.Attempts, r.Parked, r.ParkedAt, r.NextAttemptAt, r.LeaseOwner, r.LeaseUntil, r.LastError = 31, true, at(5), at(1e6), "ghost", at(1e6), "boom"
	got := register(t, b, r)
	require.Equal(t, uint64(1), got.NextSeq, "NextSeq 0 means the stream's beginning")
	require.Equal(t, r.URL, got.URL)
	require.Equal(t, store.RejectSkip, got.OnRejected)
	require.Zero(t, got.Attempts)
	require.False(t, got.Parked)
	require.Empty(t, got.LeaseOwner)
	require.Empty(t, got.LastError)

	st := get(t, b, "actor/alice", "https://remote.example/inbox")
	require.Equal(t, "activitypub", st.Namespace)
	require.Equal(t, string(r.Config), string(st.Config), "config bytes round-trip")
	require.Equal(t, uint64(2), st.Head)
	require.Equal(t, uint64(2), st.Lag())
	require.False(t, st.Parked)
	require.Zero(t, st.Attempts)
	require.Equal(t, store.StateReady, st.State())
	require.Len(t, due(t, b, "activitypub", "w", at(0), 1).Registrations, 1, "a new registration is due at once")

	require.Equal(t, uint64(3), register(t, b, regFrom("actor/alice", "from-head", "activitypub", 3)).NextSeq, "a registration may start past the head")
	require.Equal(t, store.StateIdle, get(t, b, "actor/alice", "from-head").State())

	require.ErrorIs(t, errOf(b.Get(t.Context(), "actor/alice", "nobody")), journal.ErrNotFound)
}

func testReregisterKeepsCursor(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Advance(t.Context(), claim(t, b, "s", "r", at(0)), 4))
	changed := reg("s", "r", "cloudevents")
	changed.URL = "https://moved.example/hook"
	changed.Config = store.Config(`{"source":"/x"}`)
	changed.NextSeq = 1 // ignored: the cursor is kept
	got := register(t, b, changed)
	require.Equal(t, uint64(4), got.NextSeq, "re-registering keeps the cursor")
	st := get(t, b, "s", "r")
	require.Equal(t, "https://moved.example/hook", st.URL)
	require.Equal(t, "cloudevents", st.Namespace)
	require.Equal(t, `{"source":"/x"}`, string(st.Config))
	require.Equal(t, uint64(4), st.NextSeq)
}

func testRegisterPastSealedStream(t *testing.T, b Backend) {
	appendSealed(t, b, "task/1")
	register(t, b, reg("task/1", "from-start", "a2a")) // still has records to receive

	require.ErrorIs(t, errOf(b.Register(t.Context(), regFrom("task/1", "too-late", "a2a", 3))), journal.ErrSealed, "a cursor past a final record would never deliver anything")
	require.ErrorIs(t, errOf(b.Get(t.Context(), "task/1", "too-late")), journal.ErrNotFound)
	require.True(t, get(t, b, "task/1", "from-start").Sealed)
}

func testBadRegistrationChangesNothing(t *testing.T, b Backend) {
	ok := reg("s", "r", "webhook")
	with := func(f func(r *store.Registration)) store.Registration { r := ok; f(&r); return r }
	cases := map[string]store.Registration{
		"empty stream":           with(func(r *store.Registration) { r.Stream = "" }),
		"stream with a space":    with(func(r *store.Registration) { r.Stream = "a b" }),
		"stream of 10000 bytes":  with(func(r *store.Registration) { r.Stream = strings.Repeat("s", 10000) }),
		"empty id":               with(func(r *store.Registration) { r.ID = "" }),
		"id with a control char": with(func(r *store.Registration) { r.ID = "r\x07" }),
		"empty namespace":        with(func(r *store.Registration) { r.Namespace = "" }),
		"namespace in uppercase": with(func(r *store.Registration) { r.Namespace = "WebHook" }),
		"empty url":              with(func(r *store.Registration) { r.URL = "" }),
		"relative url":           with(func(r *store.Registration) { r.URL = "/inbox" }),
		"ftp url":                with(func(r *store.Registration) { r.URL = "ftp://files.example/inbox" }),
		"javascript url":         with(func(r *store.Registration) { r.URL = "javascript:alert(1)" }),
		"url with userinfo":      with(func(r *store.Registration) { r.URL = "https://user:hunter2@receiver.example/" }),
		"url with a fragment":    with(func(r *store.Registration) { r.URL = "https://receiver.example/#x" }),
		"url with a space":       with(func(r *store.Registration) { r.URL = "https://receiver.example/a b" }),
		"url without a host":     with(func(r *store.Registration) { r.URL = "https:///inbox" }),
		"url of 3000 bytes":      with(func(r *store.Registration) { r.URL = "https://receiver.example/" + strings.Repeat("a", 3000) }),
		"config not an object":   with(func(r *store.Registration) { r.Config = store.Config(`["a"]`) }),
		"config not JSON":        with(func(r *store.Registration) { r.Config = store.Config(`{secret`) }),
		"unknown reject policy":  with(func(r *store.Registration) { r.OnRejected = "drop" }),
		"kind pattern empty":     with(func(r *store.Registration) { r.Kinds = []string{"order.*", ""} }),
		"kind pattern mid star":  with(func(r *store.Registration) { r.Kinds = []string{"order.*.paid"} }),
		"kind pattern twice":     with(func(r *store.Registration) { r.Kinds = []string{"a", "a"} }),
	}
	for name, r := range cases {
		err := errOf(b.Register(t.Context(), r))
		require.ErrorIs(t, err, journal.ErrInvalid, name)
		require.NotContains(t, err.Error(), "hunter2", "%s: the error repeats no secret", name)
		require.NotContains(t, err.Error(), "s3cr3t", "%s: the error repeats no config", name)
		var ie *journal.InvalidError
		require.True(t, errors.As(err, &ie), name)
	}
	require.Empty(t, list(t, b, store.ListQuery{}), "no bad registration was stored")
}

func testUnregister(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 1, at(10), store.Evidence{At: at(0), Event: store.EventFailed, Error: "503"}))
	require.NoError(t, b.Unregister(t.Context(), "s", "r"))
	require.ErrorIs(t, errOf(b.Get(t.Context(), "s", "r")), journal.ErrNotFound)
	require.ErrorIs(t, errOf(b.Evidence(t.Context(), "s", "r", 0)), journal.ErrNotFound, "evidence goes with its registration")
	require.ErrorIs(t, b.Unregister(t.Context(), "s", "r"), journal.ErrNotFound)
}

func testListFiltersAndPages(t *testing.T, b Backend) {
	appendN(t, b, "a", 3)
	appendN(t, b, "b", 1)
	for i := range 5 {
		register(t, b, reg("a", fmt.Sprintf("r%d", i), "webhook"))
	}
	register(t, b, reg("b", "r0", "cloudevents"))
	register(t, b, regFrom("b", "idle", "cloudevents", 2))
	for _, id := range []string{"r1", "r3", "r4"} {
		require.NoError(t, b.Park(t.Context(), claim(t, b, "a", id, at(0)), 1, store.Evidence{At: at(5), Event: store.EventParked, Error: "410 Gone"}))
	}

	all := list(t, b, store.ListQuery{})
	require.Equal(t, []string{"a/r0", "a/r1", "a/r2", "a/r3", "a/r4", "b/idle", "b/r0"}, keys(all), "ordered by stream, then id")
	require.Equal(t, uint64(3), all[0].Head)

	var pages [][]string
	q := store.ListQuery{Parked: true, Limit: 2}
	for {
		page, err := b.List(t.Context(), q)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		pages = append(pages, keys(page))
		q.After = page[len(page)-1].Key()
	}
	require.Equal(t, [][]string{{"a/r1", "a/r3"}, {"a/r4"}}, pages, "parked registrations, paged by key")

	require.Equal(t, []string{"b/idle", "b/r0"}, keys(list(t, b, store.ListQuery{Namespace: "cloudevents"})))
	require.Equal(t, []string{"b/r0"}, keys(list(t, b, store.ListQuery{Stream: "b", Lagging: true})), "the idle registration has no lag")

	require.ErrorIs(t, errOf(b.List(t.Context(), store.ListQuery{Limit: -1})), journal.ErrInvalid)
	require.ErrorIs(t, errOf(b.List(t.Context(), store.ListQuery{Limit: store.MaxListLimit + 1})), journal.ErrInvalid)
}

func testStats(t *testing.T, b Backend) {
	appendN(t, b, "a", 4)
	appendN(t, b, "b", 2)
	register(t, b, reg("a", "ready", "webhook"))        // lag 4
	register(t, b, reg("a", "retrying", "webhook"))     // lag 4, attempts 1
	register(t, b, reg("a", "parked-early", "webhook")) // parked at 5
	register(t, b, reg("b", "parked-late", "webhook"))  // parked at 9
	register(t, b, regFrom("b", "idle", "cloudevents", 3))
	register(t, b, reg("b", "leased", "cloudevents")) // lag 2, leased
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "a", "retrying", at(0)), 2, at(100), store.Evidence{At: at(1), Error: "503"}))
	require.NoError(t, b.Park(t.Context(), claim(t, b, "a", "parked-early", at(0)), 1, store.Evidence{At: at(5), Error: "410"}))
	require.NoError(t, b.Park(t.Context(), claim(t, b, "b", "parked-late", at(0)), 1, store.Evidence{At: at(9), Error: "410"}))
	batch := due(t, b, "cloudevents", "w1", at(10), 10)
	require.Equal(t, []string{"b/leased"}, keys(batch.Registrations))

	st, err := b.Stats(t.Context(), at(20))
	require.NoError(t, err)
	require.Equal(t, store.NamespaceStats{Ready: 1, Retrying: 1, Parked: 2, Behind: 4 + 3 + 4 + 2}, st.Namespaces["webhook"])
	require.Equal(t, store.NamespaceStats{Ready: 1, Idle: 1, Leased: 1, Behind: 2}, st.Namespaces["cloudevents"])
	require.NotNil(t, st.OldestParked)
	require.Equal(t, "a/parked-early", st.OldestParked.Stream+"/"+st.OldestParked.ID)
	require.Equal(t, []string{"a/parked-early", "a/ready", "a/retrying", "b/leased", "b/parked-late"}, keys(st.Lagging),
		"largest lag first, then by key")

	later, err := b.Stats(t.Context(), at(10+60))
	require.NoError(t, err)
	require.Zero(t, later.Namespaces["cloudevents"].Leased, "an expired lease is not counted")
}
