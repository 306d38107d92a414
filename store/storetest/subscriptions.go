package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

var subscriptionTests = []test{
	testSubscriptionFollowsExistingAndFutureStreamsInOrder, testSubscriptionFromHead, testUnsubscribeRemovesEveryRegistration,
	testSubscriptionRacingNewStreamsMaterialisesEachOnce, testUnsubscribeRacingNewStreamsLeavesNone, testBadSubscriptionChangesNothing, testRegisterCannotChangeWhatASubscriptionMade,
	testSubscriptionRetryPolicyReachesEveryStream, testSubscribeAnswersTheOneItNames,
	testASubscribeOverChangedSettingsIsRefused, testASubscribeOverNoneCreatesOnlyWhileNoneExists,
}

func sub(prefix, id string) store.Subscription {
	return store.Subscription{Prefix: prefix, ID: id, Namespace: "webhook", URL: "https://receiver.example/" + id,
		Config: store.Config(`{"secret":"s3cr3t"}`)}
}

// subscribe subscribes s over what is stored of its prefix and id: a create
// or an update.
func subscribe(t *testing.T, b Backend, s store.Subscription) store.SubscriptionStatus {
	t.Helper()
	st, err := b.Subscribe(t.Context(), s, subscription(t, b, s.Prefix, s.ID))
	require.NoError(t, err)
	return st
}

// subscription returns subscription prefix/id as Subscriptions lists it, or
// the zero Subscription if there is none.
func subscription(t *testing.T, b Backend, prefix, id string) store.Subscription {
	t.Helper()
	list, err := b.Subscriptions(t.Context(), prefix)
	require.NoError(t, err)
	for _, st := range list {
		if st.ID == id {
			return st.Subscription
		}
	}
	return store.Subscription{}
}

// subscribed lists the registrations subscription prefix/id materialised,
// as "stream@cursor".
func subscribed(t *testing.T, b Backend, prefix, id string) []string {
	t.Helper()
	list, err := store.AllRegistrations(t.Context(), b, store.ListQuery{Subscription: prefix, ID: id})
	require.NoError(t, err)
	return mapped(list, func(st store.Status) string {
		require.Equal(t, prefix, st.Subscription)
		return fmt.Sprintf("%s@%d", st.Stream, st.NextSeq)
	})
}

// testSubscriptionFollowsExistingAndFutureStreamsInOrder: a subscription
// follows the streams under its prefix that exist and those created after
// it, each as a registration of its own, delivered in seq order with its
// own cursor; streams outside the prefix (one that only shares its
// characters, tenant/420/) never.
func testSubscriptionFollowsExistingAndFutureStreamsInOrder(t *testing.T, b Backend) {
	appendN(t, b, "tenant/42/orders", 3)
	appendN(t, b, "tenant/420/orders", 2)
	appendN(t, b, "tenant/4", 1)
	st := subscribe(t, b, sub("tenant/42/", "hook"))
	require.Equal(t, 1, st.Streams, "the existing stream under the prefix")
	require.Equal(t, []string{"tenant/42/orders@1"}, subscribed(t, b, "tenant/42/", "hook"))

	appendN(t, b, "tenant/42/invoices", 2) // created after: picked up with its first record
	appendN(t, b, "tenant/421/x", 1)
	heraldEvents(t, b) // a sequencer step, for a store that numbers after the commit
	require.Equal(t, []string{"tenant/42/invoices@1", "tenant/42/orders@1"}, subscribed(t, b, "tenant/42/", "hook"))

	rc := &receiver{b: b}
	w := worker(t, b, rc, 10)
	_, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)
	per := map[string][]int{}
	for _, a := range rc.arrivals() {
		per[a.key.Stream] = append(per[a.key.Stream], a.n)
		require.Equal(t, "hook", a.key.ID)
	}
	require.Equal(t, map[string][]int{"tenant/42/orders": {1, 2, 3}, "tenant/42/invoices": {1, 2}}, per,
		"each stream in order; none outside the prefix")
	require.Equal(t, []string{"tenant/42/invoices@3", "tenant/42/orders@4"}, subscribed(t, b, "tenant/42/", "hook"), "a cursor each")

	list, err := b.Subscriptions(t.Context(), "")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, 2, list[0].Streams, "one subscription, two streams")
	require.Equal(t, []string{"tenant/42/", "hook", "webhook", "https://receiver.example/hook", `{"secret":"s3cr3t"}`},
		[]string{list[0].Prefix, list[0].ID, list[0].Namespace, list[0].URL, string(list[0].Config)})

	// Subscribing again updates every registration's destination, keeping cursors.
	again := sub("tenant/42/", "hook")
	again.URL, again.Window = "https://moved.example/hook", 4
	require.Equal(t, 2, subscribe(t, b, again).Streams)
	for _, s := range []string{"tenant/42/invoices", "tenant/42/orders"} {
		g := get(t, b, s, "hook")
		require.Equal(t, []any{"https://moved.example/hook", 4}, []any{g.URL, g.Window})
	}
	require.Equal(t, []string{"tenant/42/invoices@3", "tenant/42/orders@4"}, subscribed(t, b, "tenant/42/", "hook"))
}

// testSubscriptionRetryPolicyReachesEveryStream: a subscription's retry
// policy is its registrations', on the streams that exist, on those created
// later (the store's trigger), and after the subscription is updated.
func testSubscriptionRetryPolicyReachesEveryStream(t *testing.T, b Backend) {
	appendN(t, b, "tenant/7/orders", 1)
	s := sub("tenant/7/", "hook")
	s.Retry = store.RetryPolicy{Schedule: []time.Duration{5 * time.Second, 5 * time.Minute, 2 * time.Hour}, For: 72 * time.Hour}
	subscribe(t, b, s)
	appendN(t, b, "tenant/7/invoices", 1)
	heraldEvents(t, b) // a sequencer step, for a store that numbers after the commit
	for _, stream := range []string{"tenant/7/orders", "tenant/7/invoices"} {
		require.Equal(t, s.Retry, get(t, b, stream, "hook").Retry, stream)
	}
	list, err := b.Subscriptions(t.Context(), "tenant/7/")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, s.Retry, list[0].Retry, "as listed")

	s.Retry = store.RetryPolicy{MaxAttempts: 3}
	subscribe(t, b, s)
	for _, stream := range []string{"tenant/7/orders", "tenant/7/invoices"} {
		require.Equal(t, s.Retry, get(t, b, stream, "hook").Retry, "updated: "+stream)
	}
}

// testSubscriptionFromHead: with FromHead, a stream that exists starts past
// its head (a sealed one is left out); one created later at its first record.
func testSubscriptionFromHead(t *testing.T, b Backend) {
	appendN(t, b, "t/a", 3)
	appendSealed(t, b, "t/done")
	s := sub("t/", "h")
	s.FromHead = true
	require.Equal(t, 1, subscribe(t, b, s).Streams)
	appendN(t, b, "t/b", 2)
	heraldEvents(t, b)
	require.Equal(t, []string{"t/a@4", "t/b@1"}, subscribed(t, b, "t/", "h"))
}

// testUnsubscribeRemovesEveryRegistration: one Unsubscribe removes the
// subscription and every registration it made, with their evidence; a
// registration of the same stream registered alone stays; a stream created
// afterwards is not followed.
func testUnsubscribeRemovesEveryRegistration(t *testing.T, b Backend) {
	appendN(t, b, "u/1", 1)
	appendN(t, b, "u/2", 1)
	register(t, b, reg("u/1", "alone", "webhook"))
	subscribe(t, b, sub("u/", "h"))
	require.NoError(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "u/1", Registration: "h", At: at(0), Event: store.EventFailed, Error: "503"}))
	n, err := b.Unsubscribe(t.Context(), "u/", "h")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Empty(t, subscribed(t, b, "u/", "h"))
	_, err = b.Get(t.Context(), "u/1", "h")
	require.ErrorIs(t, err, journal.ErrNotFound)
	get(t, b, "u/1", "alone")
	appendN(t, b, "u/3", 1)
	heraldEvents(t, b)
	require.Empty(t, subscribed(t, b, "u/", "h"), "no longer followed")
	_, err = b.Unsubscribe(t.Context(), "u/", "h")
	require.ErrorIs(t, err, journal.ErrNotFound)
	list, err := b.Subscriptions(t.Context(), "")
	require.NoError(t, err)
	require.Empty(t, list)
}

// testSubscriptionRacingNewStreamsMaterialisesEachOnce: streams created by
// concurrent appenders while the subscription is made are each followed
// exactly once, whichever came first.
func testSubscriptionRacingNewStreamsMaterialisesEachOnce(t *testing.T, b Backend) {
	const n = 24
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			_, err := b.Append(t.Context(), fmt.Sprintf("race/%02d", i), entry(fmt.Sprintf("race-%d", i)))
			if err == nil {
				_, err = b.Append(t.Context(), fmt.Sprintf("race/%02d", i), entry(fmt.Sprintf("race-%d-again", i)))
			}
			return err
		})
		if i == n/2 {
			g.Go(func() error { _, err := b.Subscribe(t.Context(), sub("race/", "h"), store.Subscription{}); return err })
		}
	}
	require.NoError(t, g.Wait())
	heraldEvents(t, b)
	got := subscribed(t, b, "race/", "h")
	require.Len(t, got, n, "every stream once: %v", got)
	for i, s := range got {
		require.Equal(t, fmt.Sprintf("race/%02d@1", i), s)
	}
}

// testUnsubscribeRacingNewStreamsLeavesNone: streams created by concurrent
// appenders while the subscription is made and removed, again and again,
// leave no registration of it behind, whichever came first.
func testUnsubscribeRacingNewStreamsLeavesNone(t *testing.T, b Backend) {
	stop := make(chan struct{})
	var g errgroup.Group
	for w := range 4 {
		g.Go(func() error {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return nil
				default:
				}
				if _, err := b.Append(t.Context(), fmt.Sprintf("race/%d-%04d", w, i), entry(fmt.Sprintf("race-%d-%d", w, i))); err != nil {
					return err
				}
			}
		})
	}
	for range 20 {
		subscribe(t, b, sub("race/", "h"))
		_, err := b.Unsubscribe(t.Context(), "race/", "h")
		require.NoError(t, err)
	}
	close(stop)
	require.NoError(t, g.Wait())
	heraldEvents(t, b)
	require.Empty(t, subscribed(t, b, "race/", "h"), "no registration outlives its subscription")
}

// testBadSubscriptionChangesNothing: a prefix that is no whole path
// segment, herald's own, or an invalid template is refused naming the field.
func testBadSubscriptionChangesNothing(t *testing.T, b Backend) {
	appendN(t, b, "tenant/1", 1)
	for _, tc := range []struct {
		s     store.Subscription
		field string
	}{
		{sub("tenant/4", "h"), "stream_prefix"},
		{sub("herald/", "h"), "stream_prefix"},
		{sub("her", "h"), "stream_prefix"},
		{sub("", "h"), "stream_prefix"},
		{sub("tenant/", ""), "registration id"},
		{store.Subscription{Prefix: "tenant/", ID: "h", Namespace: "webhook", URL: "ftp://x"}, "url"},
	} {
		_, err := b.Subscribe(t.Context(), tc.s, store.Subscription{})
		var inv *journal.InvalidError
		require.ErrorAs(t, err, &inv, "%+v", tc.s)
		require.Equal(t, tc.field, inv.Field)
	}
	list, err := b.Subscriptions(t.Context(), "")
	require.NoError(t, err)
	require.Empty(t, list)
	require.Empty(t, subscribed(t, b, "tenant/", "h"))
}

// testRegisterCannotChangeWhatASubscriptionMade: its destination and config
// are the subscription's; Register of its key is refused, changing nothing.
func testRegisterCannotChangeWhatASubscriptionMade(t *testing.T, b Backend) {
	appendN(t, b, "m/1", 1)
	subscribe(t, b, sub("m/", "h"))
	r := reg("m/1", "h", "webhook")
	r.URL = "https://elsewhere.example/"
	_, err := b.Register(t.Context(), r)
	require.ErrorIs(t, err, journal.ErrInvalid)
	require.ErrorContains(t, err, "register that prefix again")
	g := get(t, b, "m/1", "h")
	require.Equal(t, []string{"https://receiver.example/h", `{"secret":"s3cr3t"}`}, []string{g.URL, string(g.Config)}, "the subscription's config, read through it")
}

// testSubscribeAnswersTheOneItNames: of several subscriptions of one
// prefix, Subscribe answers and changes the one it names: its streams, its
// config; its neighbours' registrations keep theirs.
func testSubscribeAnswersTheOneItNames(t *testing.T, b Backend) {
	appendN(t, b, "tenant/7/a", 1)
	appendN(t, b, "tenant/7/b", 1)
	for _, id := range []string{"a", "m", "z"} {
		require.Equal(t, 2, subscribe(t, b, sub("tenant/7/", id)).Streams)
	}
	again := sub("tenant/7/", "m")
	again.URL, again.Config = "https://moved.example/m", store.Config(`{"secret":"m2"}`)
	st := subscribe(t, b, again)
	require.Equal(t, []any{"m", 2, "https://moved.example/m", `{"secret":"m2"}`}, []any{st.ID, st.Streams, st.URL, string(st.Config)})
	for _, id := range []string{"a", "z"} {
		require.Equal(t, "https://receiver.example/"+id, get(t, b, "tenant/7/a", id).URL, "a neighbour keeps its own")
	}
	require.Equal(t, "https://moved.example/m", get(t, b, "tenant/7/b", "m").URL)
}

// testASubscribeOverChangedSettingsIsRefused: Subscribe over a
// subscription whose settings changed since was, any one of them, is
// refused with ErrConflict naming it, and changes nothing: what changed it
// stays, in the subscription and its registrations. Over one whose
// settings are was's it applies, though it follows more streams since.
func testASubscribeOverChangedSettingsIsRefused(t *testing.T, b Backend) {
	appendN(t, b, "t/1", 1)
	for name, change := range settingChanges {
		if name == "rate" {
			continue // a subscription has no rate
		}
		subscribe(t, b, sub("t/", name))
		was := subscription(t, b, "t/", name)
		other := was.Template("")
		change(&other)
		subscribe(t, b, store.SubscriptionOf(was.Prefix, other, was.FromHead)) // another process's, after the read
		before, stored := subscription(t, b, "t/", name), get(t, b, "t/1", name)

		mine := was
		mine.URL = "https://mine.example/" + name
		_, err := b.Subscribe(t.Context(), mine, was)
		require.ErrorIs(t, err, journal.ErrConflict, "%s changed since the read", name)
		require.ErrorContains(t, err, store.SubscriptionName("t/", name), "the error names the subscription")
		require.Equal(t, before, subscription(t, b, "t/", name), "%s: a refused subscribe changes nothing", name)
		require.Equal(t, stored, get(t, b, "t/1", name), "%s: nor its registrations", name)
	}

	was := subscription(t, b, "t/", "url")
	appendN(t, b, "t/2", 1)
	heraldEvents(t, b)
	mine := was
	mine.URL = "https://mine.example/url"
	st, err := b.Subscribe(t.Context(), mine, was)
	require.NoError(t, err, "the streams it follows are no setting")
	require.Equal(t, 2, st.Streams)
	require.Equal(t, "https://mine.example/url", get(t, b, "t/2", "url").URL)
}

// testASubscribeOverNoneCreatesOnlyWhileNoneExists: Subscribe over the
// zero Subscription (none listed) creates it; over one that exists by then
// it is ErrConflict naming it and changes nothing. Of many such creates at
// once exactly one applies, and what it wrote is stored. Over one removed
// since it was read it is ErrConflict too, and creates nothing; was naming
// another subscription is ErrInvalid.
func testASubscribeOverNoneCreatesOnlyWhileNoneExists(t *testing.T, b Backend) {
	appendN(t, b, "t/1", 1)
	st, err := b.Subscribe(t.Context(), sub("t/", "h"), store.Subscription{})
	require.NoError(t, err)
	require.Equal(t, 1, st.Streams)
	late := sub("t/", "h")
	late.Config = store.Config(`{"secret":"late"}`)
	_, err = b.Subscribe(t.Context(), late, store.Subscription{})
	require.ErrorIs(t, err, journal.ErrConflict, "created since it was read as absent")
	require.ErrorContains(t, err, store.SubscriptionName("t/", "h"))
	require.Equal(t, `{"secret":"s3cr3t"}`, string(subscription(t, b, "t/", "h").Config), "a refused create changes nothing")
	require.Equal(t, `{"secret":"s3cr3t"}`, string(get(t, b, "t/1", "h").Config))

	const n = 8
	var won atomic.Int32
	config := make(chan string, n)
	race(t, n, func(w int) error {
		s := sub("t/", "race")
		s.Config = store.Config(fmt.Sprintf(`{"secret":"w%d"}`, w))
		_, err := b.Subscribe(t.Context(), s, store.Subscription{})
		if errors.Is(err, journal.ErrConflict) {
			return nil
		}
		if err == nil {
			won.Add(1)
			config <- string(s.Config)
		}
		return err
	})
	require.Equal(t, int32(1), won.Load(), "one create of %d applies", n)
	winner := <-config
	require.Equal(t, winner, string(subscription(t, b, "t/", "race").Config), "and what it wrote is stored")
	require.Equal(t, winner, string(get(t, b, "t/1", "race").Config), "and read by its registrations")

	was := subscription(t, b, "t/", "h")
	_, err = b.Unsubscribe(t.Context(), "t/", "h")
	require.NoError(t, err)
	_, err = b.Subscribe(t.Context(), was, was)
	require.ErrorIs(t, err, journal.ErrConflict, "removed since the read")
	require.Equal(t, store.Subscription{}, subscription(t, b, "t/", "h"), "it creates nothing")

	other := subscription(t, b, "t/", "race")
	_, err = b.Subscribe(t.Context(), sub("t/", "h"), other)
	require.ErrorIs(t, err, journal.ErrInvalid, "was names another subscription")
	require.ErrorContains(t, err, "was")
	require.Equal(t, store.Subscription{}, subscription(t, b, "t/", "h"))
}
