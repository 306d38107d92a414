package page_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

var secretRE = regexp.MustCompile(`<pre id="secret">(hrt_[A-Za-z0-9_-]+)</pre>`)

// TestAdminMakesAndRevokesTokensOnThePage: an admin makes a scoped token
// with the form, which shows the secret once; the list shows it without
// the secret; revoking it through the confirmation ends its use at once;
// a token that is not an admin's is refused the view.
func TestAdminMakesAndRevokesTokensOnThePage(t *testing.T) {
	s := seeded(t)
	srv, c, csrf := loggedIn(t, s)

	resp, body := post(t, c, srv.URL+"/ui/tokens", url.Values{"csrf": {csrf}, "name": {"tenant 2"}, "role": {"operator"}, "scope": {"orders/2\r\n\r\n"}})
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	m := secretRE.FindStringSubmatch(body)
	require.NotNil(t, m, body)
	secret := m[1]
	ts, err := s.Tokens(t.Context())
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.Equal(t, []string{"orders/2"}, ts[0].Scope)
	require.Equal(t, store.HashToken(secret), ts[0].Hash)

	_, list := get(t, c, srv.URL+"/ui/tokens")
	require.Contains(t, list, ts[0].ID)
	require.NotContains(t, list, secret, "the secret is shown once")

	resp, body = post(t, c, srv.URL+"/ui/tokens", url.Values{"csrf": {csrf}, "name": {"x"}, "role": {"admin"}, "scope": {"orders/"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, `id="token-error"`)

	tenant := client(t)
	_, landed := loginAs(t, tenant, srv, secret)
	require.Equal(t, "/ui/registrations", landed)
	resp, _ = get(t, tenant, srv.URL+"/ui/tokens")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an operator may not see the tokens")

	resp, body = get(t, c, srv.URL+"/ui/confirm?action=revoke-token&id="+ts[0].ID)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"revoke-token"}, "id": {ts[0].ID}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(t, "/ui/tokens?done=revoke-token", resp.Header.Get("Location"))
	resp, _ = get(t, tenant, srv.URL+"/ui/registrations")
	require.Equal(t, "/ui/login", resp.Header.Get("Location"), "the revoked token's session ended")
}
