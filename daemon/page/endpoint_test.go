package page_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/projection/webhook"
)

// A webhook's secret is rotated from the page with a confirmation; the new
// secret is shown in that answer only, the old one kept until expire_old
// after the page's clock, which the registration then shows; it shows its
// headers' names, never their values.
func TestRotateSecretFromThePageShowsTheNewSecretOnce(t *testing.T) {
	s := seeded(t)
	srv, c, csrf := loggedIn(t, s)
	billing := url.Values{"stream": {"orders/1"}, "id": {"billing"}}

	_, body := get(t, c, srv.URL+"/ui/registration?"+billing.Encode())
	require.Contains(t, body, `id="rotate-secret"`)
	resp, body := get(t, c, srv.URL+"/ui/confirm?"+with(with(billing, "action", "rotate-secret"), "expire_old", "1h").Encode())
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "for 1h0m0s")
	resp, body = get(t, c, srv.URL+"/ui/confirm?"+with(with(billing, "action", "rotate-secret"), "expire_old", "-1h").Encode())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "expire_old")

	resp, body = post(t, c, srv.URL+"/ui/action", with(with(with(billing, "action", "rotate-secret"), "expire_old", "1h"), "csrf", csrf))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	shown := html.UnescapeString(regexp.MustCompile(`whsec_[^<\s]+`).FindString(body))
	require.NotEmpty(t, shown, body)
	require.NotEqual(t, seedSecretConfig, shown)

	st, err := s.Get(t.Context(), "orders/1", "billing")
	require.NoError(t, err)
	cfg, err := webhook.ParseConfig(st.Config)
	require.NoError(t, err)
	require.Equal(t, []string{shown}, cfg.Secrets)
	require.Equal(t, []webhook.Retiring{{Secret: seedSecretConfig, Until: seedView.Add(time.Hour)}}, cfg.Retiring)
	_, body = get(t, c, srv.URL+"/ui/registration?"+billing.Encode())
	require.Regexp(t, `<td id="secrets">1 signing \(never shown\); the old ones a rotation retired sign beside them until `+
		regexp.QuoteMeta(seedView.Add(time.Hour).UTC().Format("2006-01-02 15:04:05Z")), body, "the registration says until when the old one signs")

	cfg.Headers = map[string]string{"X-Tenant": "tenant-value-42"}
	reg := st.Registration
	reg.Config, err = cfg.Encode()
	require.NoError(t, err)
	_, err = s.Register(t.Context(), reg)
	require.NoError(t, err)
	_, body = get(t, c, srv.URL+"/ui/registration?"+billing.Encode())
	require.NotContains(t, body, shown, "the secret is shown once")
	require.NotContains(t, body, "tenant-value-42")
	require.Regexp(t, `id="headers"><bdi>X-Tenant</bdi>`, body)
}

// A rotation's old secrets past their until no longer sign (each attempt
// judges by its instant): the registration says they stopped then, not
// that they sign beside the new one until an instant gone by.
func TestOldSecretsPastTheirUntilShowAsStopped(t *testing.T) {
	s := seeded(t)
	srv, c, _ := loggedIn(t, s)
	st, err := s.Get(t.Context(), "orders/1", "billing")
	require.NoError(t, err)
	cfg, err := webhook.ParseConfig(st.Config)
	require.NoError(t, err)
	cfg, _, err = cfg.Rotate(seedView.Add(-2*time.Hour), time.Hour) // the old one signed until an hour ago
	require.NoError(t, err)
	reg := st.Registration
	reg.Config, err = cfg.Encode()
	require.NoError(t, err)
	_, err = s.Register(t.Context(), reg)
	require.NoError(t, err)

	_, body := get(t, c, srv.URL+"/ui/registration?stream=orders%2F1&id=billing")
	require.Regexp(t, `<td id="secrets">1 signing \(never shown\); the old ones a rotation retired stopped signing at `+
		regexp.QuoteMeta(seedView.Add(-time.Hour).UTC().Format("2006-01-02 15:04:05Z")), body)
	require.NotContains(t, body, "sign beside them")
}
