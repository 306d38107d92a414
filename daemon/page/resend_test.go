package page_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

// TestBrowserResendDeliversOneRecordAgain: on a registration that
// delivered 3 records, the operator picks seq 2 and a name, confirms, and
// the next sweep sends record 2 once more with its original id; the cursor
// stays, and the page shows the answer in the evidence.
func TestBrowserResendDeliversOneRecordAgain(t *testing.T) {
	ctx := browser(t)
	s := openStore(t)
	rcv := newReceiver(t, http.StatusNoContent)
	rcv.hook(t, s, "orders/9", "shop", "o9", 3)
	w := loopbackWorker(t, s)
	rep, err := w.RunOnce(t.Context(), seedT0, 10)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Deliveries)

	askedAt := seedT0.Add(time.Hour)
	_, srv := serve(t, s, testToken, askedAt)
	browserLogin(t, ctx, srv, testToken)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/ui/registration?stream=orders%2F9&id=shop"),
		chromedp.WaitVisible(chromedp.ID("resend")),
		chromedp.SetValue(chromedp.ID("resend-seq"), "2"),
		chromedp.SendKeys(chromedp.ID("resend-by"), "alice"),
		chromedp.Click(chromedp.ID("resend")),
		chromedp.WaitVisible(chromedp.ID("confirm")),
	))
	what, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("what")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("done"))))
	done, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
	require.NoError(t, err)
	require.Contains(t, what, "Send record #2 to it once more")
	require.Contains(t, what, `naming "alice"`)
	require.Contains(t, done, "Resend queued")

	rep, err = w.RunOnce(t.Context(), askedAt, 10)
	require.NoError(t, err)
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
