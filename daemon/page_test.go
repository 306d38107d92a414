package daemon

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// TestRunServesThePageOnTheAdminAddress: a running daemon serves the
// operator's page under /ui/ of its admin address, GET / sends there, and
// the admin API answers beside it.
func TestRunServesThePageOnTheAdminAddress(t *testing.T) {
	s := sqliteStore(t)
	_, err := s.Register(t.Context(), push.Registration{Stream: "orders/1", ID: "billing", Namespace: "webhook",
		URL: "https://billing.example/hook", Config: push.Config(`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`)})
	require.NoError(t, err)
	tr, err := transport.New(transport.Options{})
	require.NoError(t, err)
	d := start(t, Options{Store: s, Transport: tr, Projections: []push.Projection{webhook.New()}, AdminAddr: "127.0.0.1:0",
		Every: time.Hour})
	require.NotNil(t, d.Page())
	addrs := d.Addrs
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "http://" + addrs.Admin
	resp, err := c.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
	resp, err = c.Get(base + "/ui/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `id="ns-webhook"`)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	resp, err = c.Get(base + "/v1/registrations")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
}
