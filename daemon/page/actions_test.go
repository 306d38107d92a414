package page_test

// An operator's actions on one registration, taken on the page: unpark,
// set or remove a rate, resend a record.

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// hooked is a fresh store in which id is a webhook on stream (n records)
// to a new receiver answering status; see receiver.hook.
func hooked(t *testing.T, status int, stream, id, prefix string, n int) (*sqlite.Store, *receiver) {
	t.Helper()
	s := seedtest.SQLite(t)
	rcv := newReceiver(t, status)
	rcv.hook(t, s, stream, id, prefix, n)
	return s, rcv
}

// sweepAt runs w once at the instant at and returns its report.
func sweepAt(t *testing.T, w *push.Worker, at time.Time) push.SweepReport {
	t.Helper()
	rep, err := w.RunOnce(t.Context(), at, 10)
	require.NoError(t, err)
	return rep
}

// confirmAction runs ask, which leads the browser to an action's
// confirmation, confirms it, and returns the confirmation's question and
// the page's answer.
func confirmAction(t *testing.T, ctx context.Context, ask ...chromedp.Action[chromedp.Void]) (what, done string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, append(ask, chromedp.WaitVisible(chromedp.ID("confirm")))...))
	what, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("what")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("done"))))
	done, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
	require.NoError(t, err)
	return what, done
}

// TestBrowserUnparkResumesAParkedRegistration: a receiver answers 410, the
// registration parks; the operator unparks it from the page (button, then
// the confirmation); the next sweep delivers every record to the receiver.
func TestBrowserUnparkResumesAParkedRegistration(t *testing.T) {
	ctx := browser(t)
	s, rcv := hooked(t, http.StatusGone, "orders/7", "shop", "o7", 3)
	w := loopbackWorker(t, s)
	require.Equal(t, 1, sweepAt(t, w, seedT0).Parked, "410 parks")

	unparkAt := seedT0.Add(time.Hour)
	srv := browse(t, ctx, s, unparkAt)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui/registration?stream=orders%2F7&id=shop")))
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("state")))
	require.NoError(t, err)
	_, done := confirmAction(t, ctx, chromedp.Click(chromedp.ID("unpark")))
	require.Equal(t, "parked", state)
	require.Contains(t, done, "Unparked")
	st, err := s.Get(t.Context(), "orders/7", "shop")
	require.NoError(t, err)
	require.False(t, st.Parked)
	evs, err := s.Evidence(t.Context(), "orders/7", "shop", 1)
	require.NoError(t, err)
	require.Equal(t, store.EventUnparked, evs[0].Event)
	require.Equal(t, unparkAt, evs[0].At.UTC(), "the action's instant is the page's clock")

	rcv.answer(http.StatusNoContent)
	rep := sweepAt(t, w, unparkAt)
	require.Equal(t, 3, rep.Deliveries, "%+v", rep)
	require.Len(t, rcv.accepted(), 3, "the receiver got every record after the unpark")
	st, err = s.Get(t.Context(), "orders/7", "shop")
	require.NoError(t, err)
	require.Equal(t, uint64(4), st.NextSeq)
}

// TestBrowserSetRatePacesTheNextSweeps: an operator sets a registration's
// rate on the page (the form, then the confirmation), sees it shown, and
// the next sweeps deliver at it: one record each half second at 2/s; then
// removes it, and the rest goes at once.
func TestBrowserSetRatePacesTheNextSweeps(t *testing.T) {
	ctx := browser(t)
	s, rcv := hooked(t, http.StatusNoContent, "orders/8", "crm", "o8", 6)
	srv := browse(t, ctx, s, seedT0)
	page := srv.URL + "/ui/registration?stream=orders%2F8&id=crm"
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page)))
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("rate")))
	require.NoError(t, err)
	what, _ := confirmAction(t, ctx, chromedp.SendKeys(chromedp.CSS(`input[name="rate"]`), "2/s"), chromedp.Click(chromedp.ID("set-rate")))
	after, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("rate")))
	require.NoError(t, err)
	require.Contains(t, before, "none")
	require.Contains(t, what, "Limit it to 2/s")
	require.Contains(t, after, "2/s")
	st, err := s.Get(t.Context(), "orders/8", "crm")
	require.NoError(t, err)
	require.Equal(t, store.Rate{Count: 2, Per: time.Second}, st.Rate)

	w := loopbackWorker(t, s)
	sweep := func(ms int) push.SweepReport { return sweepAt(t, w, seedT0.Add(time.Duration(ms)*time.Millisecond)) }
	require.Equal(t, 1, sweep(0).Deliveries, "a burst of one at 2/s")
	require.Zero(t, sweep(250).Registrations, "not due before the next half second")
	require.Equal(t, 1, sweep(500).Deliveries)
	require.Len(t, rcv.accepted(), 2)

	what, _ = confirmAction(t, ctx, chromedp.Clear(chromedp.CSS(`input[name="rate"]`)), chromedp.Click(chromedp.ID("set-rate")))
	after, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("rate")))
	require.NoError(t, err)
	require.Contains(t, what, "Remove its rate limit")
	require.Contains(t, after, "none")
	require.Equal(t, 4, sweep(1000).Deliveries, "no limit from the next burst: the rest at once")
	require.Len(t, rcv.accepted(), 6)
}

// A rate the page is given is checked by the store's rule, naming the
// field, and changes nothing; a subscription's registration has no rate
// form, and the action refuses it.
func TestSetRateFromThePageRefusesWhatRegisterRefuses(t *testing.T) {
	s := seeded(t)
	srv, c, csrf := loggedIn(t, s)
	billing := url.Values{"stream": {"orders/1"}, "id": {"billing"}, "action": {"set-rate"}}
	for _, bad := range []string{"10/x", "0/s", "10001/s"} {
		resp, body := get(t, c, srv.URL+"/ui/confirm?"+with(billing, "rate", bad).Encode())
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		require.Contains(t, body, "invalid rate")
		resp, body = post(t, c, srv.URL+"/ui/action", with(with(billing, "rate", bad), "csrf", csrf))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	}
	st, err := s.Get(t.Context(), "orders/1", "billing")
	require.NoError(t, err)
	require.True(t, st.Rate.IsZero(), "nothing changed")

	_, err = s.Subscribe(t.Context(), store.Subscription{Prefix: "orders/", ID: "all", Namespace: "webhook", URL: "https://all.example/",
		Config: push.Config(`{"secrets":["` + seedSecretConfig + `"]}`)}, store.Subscription{})
	require.NoError(t, err)
	made := url.Values{"stream": {"orders/1"}, "id": {"all"}}
	_, body := get(t, c, srv.URL+"/ui/registration?"+made.Encode())
	require.NotContains(t, body, `id="set-rate"`, "a subscription's registration takes no rate")
	made.Set("action", "set-rate")
	resp, body := post(t, c, srv.URL+"/ui/action", with(with(made, "rate", "10/s"), "csrf", csrf))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	st, err = s.Get(t.Context(), "orders/1", "all")
	require.NoError(t, err)
	require.True(t, st.Rate.IsZero(), "nothing changed")
}

// TestBrowserResendDeliversOneRecordAgain: on a registration that
// delivered 3 records, the operator picks seq 2 and a name, confirms, and
// the next sweep sends record 2 once more with its original id; the cursor
// stays, and the page shows the answer in the evidence.
func TestBrowserResendDeliversOneRecordAgain(t *testing.T) {
	ctx := browser(t)
	s, rcv := hooked(t, http.StatusNoContent, "orders/9", "shop", "o9", 3)
	w := loopbackWorker(t, s)
	require.Equal(t, 3, sweepAt(t, w, seedT0).Deliveries)

	askedAt := seedT0.Add(time.Hour)
	srv := browse(t, ctx, s, askedAt)
	what, done := confirmAction(t, ctx,
		chromedp.Navigate(srv.URL+"/ui/registration?stream=orders%2F9&id=shop"),
		chromedp.WaitVisible(chromedp.ID("resend")),
		chromedp.SetValue(chromedp.ID("resend-seq"), "2"),
		chromedp.SendKeys(chromedp.ID("resend-by"), "alice"),
		chromedp.Click(chromedp.ID("resend")),
	)
	require.Contains(t, what, "Send record #2 to it once more")
	require.Contains(t, what, `naming "alice"`)
	require.Contains(t, done, "Resend queued")

	rep := sweepAt(t, w, askedAt)
	require.Equal(t, 1, rep.Resends, "%+v", rep)
	require.Equal(t, []string{"o9-1", "o9-2", "o9-3", "o9-2"}, rcv.accepted(), "record 2 once more, its original id")
	st, err := s.Get(t.Context(), "orders/9", "shop")
	require.NoError(t, err)
	require.Equal(t, uint64(4), st.NextSeq, "the cursor stays")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui/registration?stream=orders%2F9&id=shop"), chromedp.WaitVisible(chromedp.ID("evidence"))))
	evidence, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("evidence")))
	require.NoError(t, err)
	require.Contains(t, evidence, store.EventResent)
	require.Contains(t, evidence, "resent for alice")

	// A seq the registration has not acknowledged is refused at the
	// confirmation, naming it, nothing queued.
	q := url.Values{"action": {"resend"}, "stream": {"orders/9"}, "id": {"shop"}, "seq": {"4"}}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui/confirm?"+q.Encode()), chromedp.WaitReady(chromedp.CSS("main"))))
	refusal, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	require.NoError(t, err)
	require.Contains(t, refusal, "invalid seq: #4 is at or past the cursor (4)")
	batch, err := s.DueResends(t.Context(), store.DueQuery{At: askedAt, Limit: 10, Namespace: "webhook", Owner: "o", LeaseUntil: askedAt.Add(time.Minute)})
	require.NoError(t, err)
	require.Empty(t, batch.Resends)
}
