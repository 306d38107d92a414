package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// An operator's resend of one record (store.Store.Resend, DueResends,
// RenewResends, Resent).
var resendTests = []test{
	testResendIsPendingUntilClaimedAndResent, testResendRefusesWhatWasNotAcknowledged, testResendClaimsAreFenced,
	testResendsGoWithTheirRegistration, testResendOfAPausedRegistration, testDueResendsOrderAndLimit,
	testTwoWorkersSendAResendOnce, testResendRefusesAKindNotWanted,
}

// resendAt5 appends 5 records to "s" and registers s/r with its cursor at 5.
func resendAt5(t *testing.T, b Backend) {
	t.Helper()
	streamWithReg(t, b, 5, regFrom("s", "r", "webhook", 5))
}

func dueResends(t *testing.T, b Backend, ns, owner string, when time.Time, limit int) store.ResendBatch {
	t.Helper()
	batch, err := b.DueResends(t.Context(), store.DueQuery{At: when, Limit: limit, Namespace: ns, Owner: owner, LeaseUntil: when.Add(time.Minute)})
	require.NoError(t, err)
	return batch
}

func resendSeqs(batch store.ResendBatch) []uint64 {
	return mapped(batch.Resends, func(r store.Resend) uint64 { return r.Seq })
}

// testResendIsPendingUntilClaimedAndResent: a resend is pending, asked once
// however often it is asked (queued is true the first time only), with an
// event naming who asked; claimed with
// the registration (config included) under a lease that hides it from
// other claims; Resent deletes it and stores its evidence; the cursor and
// the attempts never move.
func testResendIsPendingUntilClaimedAndResent(t *testing.T, b Backend) {
	resendAt5(t, b)
	queued, err := b.Resend(t.Context(), "s", "r", 2, at(1), "alice")
	require.NoError(t, err)
	require.True(t, queued)
	queued, err = b.Resend(t.Context(), "s", "r", 2, at(2), "bob")
	require.NoError(t, err, "asked again while pending: no error")
	require.False(t, queued, "asked again while pending: queued already")
	var resends []store.OperationalEvent
	for _, r := range heraldEvents(t, b) {
		if e := payload(t, r); e.Kind == store.KindResend {
			resends = append(resends, e)
		}
	}
	require.Len(t, resends, 1, "and nothing changed")
	require.Equal(t, "alice", resends[0].By)
	require.Equal(t, uint64(2), resends[0].Cursor, "the event's cursor is the record's seq")
	require.Empty(t, evidence(t, b, "s", "r"), "a resend's evidence is its outcome")

	batch := dueResends(t, b, "webhook", "w1", at(3), 10)
	require.False(t, batch.More)
	require.Len(t, batch.Resends, 1)
	rs := batch.Resends[0]
	require.Equal(t, uint64(2), rs.Seq)
	require.Equal(t, "alice", rs.By)
	requireTime(t, at(1), rs.At, "asked at")
	require.Equal(t, "w1", rs.Owner)
	require.Equal(t, store.Key{Stream: "s", ID: "r"}, rs.Registration.Key())
	require.JSONEq(t, `{"secret":"s3cr3t"}`, string(rs.Registration.Config), "the config, opened")
	require.Equal(t, uint64(5), rs.Registration.NextSeq)
	require.Empty(t, dueResends(t, b, "webhook", "w2", at(4), 10).Resends, "leased: no other claim takes it")
	require.Empty(t, dueResends(t, b, "other", "w3", at(100), 10).Resends, "another namespace's worker never does")

	require.NoError(t, b.Resent(t.Context(), rs.Claim(), store.Evidence{At: at(5), Status: 200, RecordID: "s-2", MessageID: "s-2",
		Duration: time.Second, Error: store.ResentText(rs.By, "")}))
	ev := evidence(t, b, "s", "r")
	require.Len(t, ev, 1)
	require.Equal(t, store.EventResent, ev[0].Event)
	require.Equal(t, uint64(2), ev[0].Seq)
	require.Equal(t, 200, ev[0].Status)
	require.Equal(t, "s-2", ev[0].MessageID)
	require.Equal(t, "resent for alice", ev[0].Error)
	requireTime(t, at(5), ev[0].At, "evidence at")
	require.ErrorIs(t, b.Resent(t.Context(), rs.Claim(), store.Evidence{At: at(6)}), store.ErrLeaseLost, "sent once")
	require.Len(t, evidence(t, b, "s", "r"), 1)
	require.Empty(t, dueResends(t, b, "webhook", "w2", at(1000), 10).Resends, "nothing pending")

	st := get(t, b, "s", "r")
	require.Equal(t, uint64(5), st.NextSeq, "the cursor never moved")
	require.Zero(t, st.Attempts)
	require.Empty(t, st.LeaseOwner, "the registration was never leased")
	queued, err = b.Resend(t.Context(), "s", "r", 2, at(7), "bob")
	require.NoError(t, err)
	require.True(t, queued, "once sent, it may be asked again")
	require.Equal(t, []uint64{2}, resendSeqs(dueResends(t, b, "webhook", "w4", at(8), 10)))
}

// testResendRefusesWhatWasNotAcknowledged: each refusal names what is
// wrong and changes nothing.
func testResendRefusesWhatWasNotAcknowledged(t *testing.T, b Backend) {
	resendAt5(t, b)
	register(t, b, regFrom("s", "behind", "webhook", 1))
	ctx := t.Context()
	require.ErrorIs(t, errOf(b.Resend(ctx, "s", "nobody", 1, at(1), "alice")), journal.ErrNotFound)
	require.ErrorIs(t, errOf(b.Resend(ctx, "nowhere", "r", 1, at(1), "alice")), journal.ErrNotFound)
	for name, tc := range map[string]struct {
		id    string
		seq   uint64
		at    time.Time
		by    string
		field string
	}{
		"seq 0":              {"r", 0, at(1), "alice", "seq"},
		"the cursor's seq":   {"r", 5, at(1), "alice", "seq"},
		"past the head":      {"r", 9, at(1), "alice", "seq"},
		"nothing acked":      {"behind", 1, at(1), "alice", "seq"},
		"a zero at":          {"r", 2, time.Time{}, "alice", "at"},
		"nobody asks":        {"r", 2, at(1), "", "by"},
		"a control in by":    {"r", 2, at(1), "al\nice", "by"},
		"a name far too big": {"r", 2, at(1), string(make([]byte, store.MaxOperatorName+1)), "by"},
	} {
		_, err := b.Resend(ctx, "s", tc.id, tc.seq, tc.at, tc.by)
		require.ErrorIs(t, err, journal.ErrInvalid, name)
		var ie *journal.InvalidError
		require.ErrorAs(t, err, &ie, name)
		require.Equal(t, tc.field, ie.Field, name)
	}
	_, err := b.Resend(ctx, "s", "r", 5, at(1), "alice")
	require.ErrorContains(t, err, "has not been acknowledged")

	// Below the low-water mark: pruned.
	require.NoError(t, b.Unregister(ctx, "s", "behind"))
	pruneAll(t, b, store.PruneQuery{At: later(1)})
	info, ok := streamInfo(t, b, "s")
	require.True(t, ok)
	require.Equal(t, uint64(5), info.OldestSeq)
	_, err = b.Resend(ctx, "s", "r", 4, at(2), "alice")
	var pe *store.PrunedError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, uint64(4), pe.Seq)
	require.ErrorIs(t, err, journal.ErrInvalid)

	require.Empty(t, dueResends(t, b, "webhook", "w", at(100), 10).Resends, "a refused resend leaves nothing pending")
	require.Empty(t, evidence(t, b, "s", "r"))
}

// testResendClaimsAreFenced: a resend's lease hides it from other claims
// until it lapses; a claim that lost it writes nothing; a renewed one is
// held on; claims racing take it once.
func testResendClaimsAreFenced(t *testing.T, b Backend) {
	resendAt5(t, b)
	require.NoError(t, errOf(b.Resend(t.Context(), "s", "r", 3, at(0), "alice")))
	c1 := dueResends(t, b, "webhook", "w1", at(0), 1).Resends[0].Claim() // leased to at(60)
	require.Empty(t, dueResends(t, b, "webhook", "w2", at(59), 1).Resends)
	c2 := dueResends(t, b, "webhook", "w2", at(60), 1).Resends[0].Claim() // lapsed: taken over, leased to at(120)
	require.Equal(t, "w2", c2.Owner)

	ctx := t.Context()
	require.ErrorIs(t, b.Resent(ctx, c1, store.Evidence{At: at(61), Status: 200}), store.ErrLeaseLost, "the first claim was taken over")
	require.Empty(t, evidence(t, b, "s", "r"), "a fenced-out write stores nothing")
	renewed, err := b.RenewResends(ctx, at(200), []store.ResendClaim{c1, c2})
	require.NoError(t, err)
	require.Equal(t, []store.ResendClaim{c2}, renewed, "only the holder's claim is renewed")
	require.Empty(t, dueResends(t, b, "webhook", "w3", at(150), 1).Resends, "renewed to at(200)")
	require.ErrorIs(t, errOf(b.RenewResends(ctx, time.Time{}, []store.ResendClaim{c2})), journal.ErrInvalid)
	require.ErrorIs(t, errOf(b.RenewResends(ctx, at(300), []store.ResendClaim{{Claim: c2.Claim}})), journal.ErrInvalid, "a claim without a seq")
	require.ErrorIs(t, b.Resent(ctx, c2, store.Evidence{}), journal.ErrInvalid, "evidence with no instant")
	require.ErrorIs(t, b.Resent(ctx, store.ResendClaim{Claim: store.Claim{Stream: "s", ID: "r"}, Seq: 3}, store.Evidence{At: at(1)}), journal.ErrInvalid, "a claim without an owner")
	require.NoError(t, b.Resent(ctx, c2, store.Evidence{At: at(160), Status: 503, Error: store.ResentText("alice", "503 Service Unavailable")}))
	require.Equal(t, "resend for alice failed: 503 Service Unavailable", evidence(t, b, "s", "r")[0].Error)

	// Claims racing at one instant take a resend once.
	require.NoError(t, errOf(b.Resend(ctx, "s", "r", 4, at(300), "alice")))
	var mu sync.Mutex
	var taken []uint64
	race(t, 4, func(w int) error {
		batch, err := b.DueResends(ctx, store.DueQuery{At: at(301), Limit: 10, Namespace: "webhook", Owner: "racer-" + string(rune('a'+w)), LeaseUntil: at(361)})
		mu.Lock()
		defer mu.Unlock()
		taken = append(taken, resendSeqs(batch)...)
		return err
	})
	require.Equal(t, []uint64{4}, taken)
}

// testResendsGoWithTheirRegistration: unregister, complete and unsubscribe
// take a registration's pending resends with it; one registered again under
// the same key has none.
func testResendsGoWithTheirRegistration(t *testing.T, b Backend) {
	ctx := t.Context()
	resendAt5(t, b)
	require.NoError(t, errOf(b.Resend(ctx, "s", "r", 1, at(0), "alice")))
	require.NoError(t, b.Unregister(ctx, "s", "r"))
	register(t, b, regFrom("s", "r", "webhook", 5))
	require.Empty(t, dueResends(t, b, "webhook", "w", at(1), 10).Resends, "unregister took it")

	require.NoError(t, errOf(b.Resend(ctx, "s", "r", 1, at(2), "alice")))
	require.NoError(t, b.Complete(ctx, claim(t, b, "s", "r", at(3))))
	register(t, b, regFrom("s", "r", "webhook", 5))
	require.Empty(t, dueResends(t, b, "webhook", "w", at(4), 10).Resends, "complete took it")

	// A subscription's registration, past the head of its stream.
	appendN(t, b, "t/1", 2)
	_, err := b.Subscribe(ctx, store.Subscription{Prefix: "t/", ID: "sub", Namespace: "webhook", URL: "https://receiver.example/sub",
		Config: store.Config(`{"secret":"s3cr3t"}`), FromHead: true}, store.Subscription{})
	require.NoError(t, err)
	require.NoError(t, errOf(b.Resend(ctx, "t/1", "sub", 2, at(6), "alice")))
	require.Equal(t, []uint64{2}, resendSeqs(dueResends(t, b, "webhook", "w", at(7), 10)))
	n, err := b.Unsubscribe(ctx, "t/", "sub")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, dueResends(t, b, "webhook", "w", at(1000), 10).Resends, "unsubscribe took it")
}

// testResendOfAPausedRegistration: the operator asked: a paused (or
// parked) registration is resent to, and stays paused.
func testResendOfAPausedRegistration(t *testing.T, b Backend) {
	resendAt5(t, b)
	require.NoError(t, b.Pause(t.Context(), "s", "r", at(0), "alice", "maintenance"))
	require.NoError(t, errOf(b.Resend(t.Context(), "s", "r", 4, at(1), "bob")))
	batch := dueResends(t, b, "webhook", "w", at(2), 10)
	require.Equal(t, []uint64{4}, resendSeqs(batch))
	require.True(t, batch.Resends[0].Registration.Paused)
	require.NoError(t, b.Resent(t.Context(), batch.Resends[0].Claim(), store.Evidence{At: at(3), Status: 200}))
	st := get(t, b, "s", "r")
	require.True(t, st.Paused)
	require.Equal(t, "paused by alice: maintenance", st.LastError)
	require.Equal(t, uint64(5), st.NextSeq)
}

// testDueResendsOrderAndLimit: oldest asked first, up to the limit, More
// when one is left; a registration moved to another namespace moves its
// resends there.
func testDueResendsOrderAndLimit(t *testing.T, b Backend) {
	resendAt5(t, b)
	ctx := t.Context()
	for i, seq := range []uint64{3, 1, 4} {
		require.NoError(t, errOf(b.Resend(ctx, "s", "r", seq, at(i), "alice")))
	}
	require.ErrorIs(t, errOf(b.DueResends(ctx, store.DueQuery{At: at(5), Limit: 0, Namespace: "webhook", Owner: "w", LeaseUntil: at(6)})), journal.ErrInvalid)
	batch := dueResends(t, b, "webhook", "w", at(5), 2)
	require.Equal(t, []uint64{3, 1}, resendSeqs(batch))
	require.True(t, batch.More)
	moved := regFrom("s", "r", "cloudevents", 5)
	register(t, b, moved)
	require.Empty(t, dueResends(t, b, "webhook", "w", at(100), 10).Resends)
	batch = dueResends(t, b, "cloudevents", "w", at(100), 10)
	require.Equal(t, []uint64{3, 1, 4}, resendSeqs(batch))
	require.False(t, batch.More)
}

// testTwoWorkersSendAResendOnce: two workers sweeping at one instant send a
// pending resend once, with the record's message id, and leave the cursor
// where it was; the outcome is its evidence.
func testTwoWorkersSendAResendOnce(t *testing.T, b Backend) {
	streamWithReg(t, b, 5, regFrom("s", "r", "webhook", 6)) // every record acknowledged: no turn sends one
	require.NoError(t, errOf(b.Resend(t.Context(), "s", "r", 2, at(0), "alice")))
	rc := &receiver{}
	ws := []*push.Worker{worker(t, b, rc, 10, push.WithOwner("w1")), worker(t, b, rc, 10, push.WithOwner("w2"))}
	var mu sync.Mutex
	var total push.SweepReport
	race(t, 2, func(i int) error {
		rep, err := ws[i].RunOnce(t.Context(), at(1), 10)
		mu.Lock()
		defer mu.Unlock()
		total.Resends += rep.Resends
		total.Registrations += rep.Registrations
		return err
	})
	require.Equal(t, []int{2}, arrived(rc.arrivals()), "record 2 once, and nothing else")
	require.Equal(t, 1, total.Resends)
	require.Zero(t, total.Registrations, "the registration was not claimed: it has nothing due")
	require.Equal(t, uint64(6), get(t, b, "s", "r").NextSeq)
	ev := evidence(t, b, "s", "r")
	require.Len(t, ev, 1)
	require.Equal(t, store.EventResent, ev[0].Event)
	require.Equal(t, 200, ev[0].Status)
	require.Equal(t, "s-2", ev[0].MessageID)
	require.Equal(t, "resent for alice", ev[0].Error)
}

// testResendRefusesAKindNotWanted: a record of a kind the registration does
// not want was passed without a message; a resend of it, which would send
// nothing, is refused naming the record, its kind and the kinds wanted, and
// leaves nothing pending.
func testResendRefusesAKindNotWanted(t *testing.T, b Backend) {
	ctx := t.Context()
	require.NoError(t, errOf(b.Append(ctx, "s",
		journal.Entry{ID: "o1", Kind: "order.created", Payload: []byte("{}")},
		journal.Entry{ID: "i1", Kind: "invoice.sent", Payload: []byte("{}")},
		journal.Entry{ID: "o2", Kind: "order.paid", Payload: []byte("{}")})))
	r := regFrom("s", "orders", "webhook", 4)
	r.Kinds = []string{"order.*"}
	register(t, b, r)
	register(t, b, regFrom("s", "all", "webhook", 4))

	_, err := b.Resend(ctx, "s", "orders", 2, at(1), "alice")
	require.ErrorIs(t, err, journal.ErrInvalid)
	var ie *journal.InvalidError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, "seq", ie.Field)
	require.Contains(t, ie.Reason, "#2 is a record of kind invoice.sent, which this registration does not want (its kinds: order.*)")
	require.Empty(t, dueResends(t, b, "webhook", "w", at(100), 10).Resends, "the refused resend left nothing pending")

	require.NoError(t, errOf(b.Resend(ctx, "s", "orders", 3, at(2), "alice")), "a kind it wants")
	require.NoError(t, errOf(b.Resend(ctx, "s", "all", 2, at(3), "alice")), "no kinds: every kind")
	require.ElementsMatch(t, []uint64{3, 2}, resendSeqs(dueResends(t, b, "webhook", "w", at(100), 10)))
}
