package page_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// TestBrowserSetRatePacesTheNextSweeps: an operator sets a registration's
// rate on the page (the form, then the confirmation), sees it shown, and
// the next sweeps deliver at it: one record each half second at 2/s; then
// removes it, and the rest goes at once.
func TestBrowserSetRatePacesTheNextSweeps(t *testing.T) {
	ctx := browser(t)
	s := openStore(t)
	rcv := newReceiver(t, http.StatusNoContent)
	rcv.hook(t, s, "orders/8", "crm", "o8", 6)
	_, srv := serve(t, s, testToken, seedT0)
	browserLogin(t, ctx, srv, testToken)
	page := srv.URL + "/ui/registration?stream=orders%2F8&id=crm"
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page)))
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("rate")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="rate"]`), "2/s"),
		chromedp.Click(chromedp.ID("set-rate")),
		chromedp.WaitVisible(chromedp.ID("confirm")),
	))
	what, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("what")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("done"))))
	after, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("rate")))
	require.NoError(t, err)
	require.Contains(t, before, "none")
	require.Contains(t, what, "Limit it to 2/s")
	require.Contains(t, after, "2/s")
	st, err := s.Get(t.Context(), "orders/8", "crm")
	require.NoError(t, err)
	require.Equal(t, store.Rate{Count: 2, Per: time.Second}, st.Rate)

	w := loopbackWorker(t, s)
	sweep := func(ms int) push.SweepReport {
		rep, err := w.RunOnce(t.Context(), seedT0.Add(time.Duration(ms)*time.Millisecond), 10)
		require.NoError(t, err)
		return rep
	}
	require.Equal(t, 1, sweep(0).Deliveries, "a burst of one at 2/s")
	require.Zero(t, sweep(250).Registrations, "not due before the next half second")
	require.Equal(t, 1, sweep(500).Deliveries)
	require.Len(t, rcv.accepted(), 2)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Clear(chromedp.CSS(`input[name="rate"]`)),
		chromedp.Click(chromedp.ID("set-rate")),
		chromedp.WaitVisible(chromedp.ID("confirm")),
	))
	what, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("what")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("done"))))
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
	_, srv := serve(t, s, testToken, seedView)
	c := client(t)
	csrf := login(t, c, srv)
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
		Config: push.Config(`{"secrets":["` + seedSecretConfig + `"]}`)})
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
