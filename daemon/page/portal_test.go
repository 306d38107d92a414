package page_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// tenantToken stores a token of role scoped to "orders/2" (the seed's
// cloudevents stream) in s and returns its secret and id.
func tenantToken(t *testing.T, s store.Backend, role store.Role, scope ...string) (string, string) {
	t.Helper()
	secret, tok, err := store.MintToken("tenant 2", role, scope, seedT0)
	require.NoError(t, err)
	require.NoError(t, s.CreateToken(t.Context(), tok))
	return secret, tok.ID
}

// loginAs logs c in with secret, and returns the CSRF token of the session
// and the view the login sent it to.
func loginAs(t *testing.T, c *http.Client, srv *httptest.Server, secret string) (csrf, landed string) {
	t.Helper()
	_, body := get(t, c, srv.URL+"/ui/login")
	resp, body := post(t, c, srv.URL+"/ui/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {secret}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	resp, body = get(t, c, srv.URL+"/ui/")
	if resp.StatusCode == http.StatusSeeOther {
		landed = resp.Header.Get("Location")
		resp, body = get(t, c, srv.URL+landed)
	}
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	return csrfOf(t, body), landed
}

// TestScopedTokenPageIsItsTenantsPortal: logged in with a token scoped to
// orders/2, the page lists only orders/2's registrations, answers 404 for
// another stream's registration and record, as for one that does not
// exist, refuses the views about every tenant, and acts on its own
// registrations only.
func TestScopedTokenPageIsItsTenantsPortal(t *testing.T) {
	s := seeded(t)
	_, srv := serve(t, s, testToken, seedView)
	secret, _ := tenantToken(t, s, store.RoleOperator, "orders/2")
	c := client(t)
	csrf, landed := loginAs(t, c, srv, secret)
	require.Equal(t, "/ui/registrations", landed, "a tenant lands on its registrations")

	_, list := get(t, c, srv.URL+"/ui/registrations")
	require.Contains(t, list, "legacy")
	require.Contains(t, list, "events")
	for _, theirs := range []string{"orders/1", "billing", "crm", "evil/"} {
		require.NotContains(t, list, theirs)
	}
	require.NotContains(t, list, `href="/ui/hosts"`, "no link to a view it may not see")

	for path, want := range map[string]int{
		"/ui/registration?stream=orders%2F1&id=crm":          http.StatusNotFound,
		"/ui/registration?stream=orders%2F2&id=legacy":       http.StatusOK,
		"/ui/record?id=orders%2F1%231":                       http.StatusNotFound,
		"/ui/record?stream=orders%2F1&seq=1":                 http.StatusNotFound,
		"/ui/record?id=orders%2F2%231":                       http.StatusOK,
		"/ui/hosts":                                          http.StatusForbidden,
		"/ui/confirm?action=unpark&stream=orders%2F1&id=crm": http.StatusNotFound,
		"/ui/confirm?action=reset-host&host=down.example":    http.StatusForbidden,
	} {
		resp, body := get(t, c, srv.URL+path)
		require.Equal(t, want, resp.StatusCode, "%s: %s", path, body)
	}
	_, theirs := get(t, c, srv.URL+"/ui/registration?stream=orders%2F1&id=crm")
	_, none := get(t, c, srv.URL+"/ui/registration?stream=orders%2F1&id=nobody")
	require.Equal(t, strings.ReplaceAll(none, "nobody", "crm"), theirs, "the same page as for a registration that does not exist")

	resp, body := post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"unpark"}, "stream": {"orders/1"}, "id": {"crm"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	st, err := s.Get(t.Context(), "orders/1", "crm")
	require.NoError(t, err)
	require.True(t, st.Parked, "another tenant's registration is untouched")

	resp, body = post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"unpark"}, "stream": {"orders/2"}, "id": {"legacy"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	st, err = s.Get(t.Context(), "orders/2", "legacy")
	require.NoError(t, err)
	require.False(t, st.Parked, "its own is unparked")
}

// TestPageRolesAndRevocation: a reader sees no actions and may take none; a
// producer cannot log in; a revoked token's session ends at its next
// request.
func TestPageRolesAndRevocation(t *testing.T) {
	s := seeded(t)
	_, srv := serve(t, s, testToken, seedView)

	reader, readerID := tenantToken(t, s, store.RoleReader)
	c := client(t)
	csrf, _ := loginAs(t, c, srv, reader)
	_, body := get(t, c, srv.URL+"/ui/registration?stream=orders%2F1&id=crm")
	require.Contains(t, body, "crm")
	require.NotContains(t, body, `id="unpark"`, "a reader is shown no action")
	resp, body := post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"unpark"}, "stream": {"orders/1"}, "id": {"crm"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, "needs the operator role")

	_, err := s.RevokeToken(t.Context(), readerID, seedView)
	require.NoError(t, err)
	resp, _ = get(t, c, srv.URL+"/ui/registrations")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/login", resp.Header.Get("Location"), "the revoked token's session ended")

	producer, _ := tenantToken(t, s, store.RoleProducer)
	c = client(t)
	_, body = get(t, c, srv.URL+"/ui/login")
	resp, body = post(t, c, srv.URL+"/ui/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {producer}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, "the page needs a reader")
	resp, _ = get(t, c, srv.URL+"/ui/registrations")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "no session was made")
}

// TestBrowserTenantSeesOnlyItsRegistrations: in a browser, a tenant's
// login lands on its registrations, whose table holds its streams only,
// and the header names its token and scope and offers no overview or hosts.
func TestBrowserTenantSeesOnlyItsRegistrations(t *testing.T) {
	ctx := browser(t)
	s := seeded(t)
	_, srv := serve(t, s, testToken, seedView)
	secret, _ := tenantToken(t, s, store.RoleOperator, "orders/2")
	browserLogin(t, ctx, srv, secret)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("table.regs"))))
	streams, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.regs tbody tr td:first-child")].map(td => td.textContent)`))
	require.NoError(t, err)
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("who")))
	require.NoError(t, err)
	nav, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("nav")))
	require.NoError(t, err)
	require.Equal(t, []string{"orders/2", "orders/2"}, streams)
	require.Contains(t, who, "operator")
	require.Contains(t, who, "orders/2")
	require.NotContains(t, nav, "Hosts")
	require.NotContains(t, nav, "Overview")
}

// TestTenantPageOffersNoActionOnAnAdminSubscriptionsRegistration: on its
// stream, a tenant's page shows the registration an admin's subscription of
// a wider prefix made, with no action but the reason, refuses (403, naming
// the prefix) a confirmation or an action asked of it by hand, and leaves
// it unchanged; its own registration keeps its actions, and an admin is
// offered every action on it but a secret's rotation (refused to all).
func TestTenantPageOffersNoActionOnAnAdminSubscriptionsRegistration(t *testing.T) {
	s := seeded(t)
	ctx := t.Context()
	const stream = "tenant/42/orders"
	_, err := s.Append(ctx, stream, journal.Entry{ID: "tenant-42-1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.Register(ctx, store.Registration{Stream: stream, ID: "billing", Namespace: "webhook", URL: "https://billing.example/hooks"})
	require.NoError(t, err)
	_, err = s.Subscribe(ctx, store.Subscription{Prefix: "tenant/", ID: "audit", Namespace: "webhook", URL: "https://audit.example/hook"}, store.Subscription{})
	require.NoError(t, err)
	_, srv := serve(t, s, testToken, seedView)
	secret, _ := tenantToken(t, s, store.RoleOperator, "tenant/42/")
	c := client(t)
	csrf, _ := loginAs(t, c, srv, secret)
	const refusal = "made by the subscription of stream prefix tenant/, which this token&#39;s scope (tenant/42/) does not cover"

	resp, body := get(t, c, srv.URL+"/ui/registration?stream=tenant%2F42%2Forders&id=audit")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `id="no-actions"`)
	require.Contains(t, body, refusal)
	require.NotContains(t, body, `name="action"`, "no action is offered")
	_, body = get(t, c, srv.URL+"/ui/registration?stream=tenant%2F42%2Forders&id=billing")
	require.Contains(t, body, `id="pause"`, "its own registration's actions are offered")

	before, err := s.Get(ctx, stream, "audit")
	require.NoError(t, err)
	resp, body = get(t, c, srv.URL+"/ui/confirm?action=pause&stream=tenant%2F42%2Forders&id=audit")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, refusal)
	resp, body = post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"pause"}, "stream": {stream}, "id": {"audit"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, refusal)
	after, err := s.Get(ctx, stream, "audit")
	require.NoError(t, err)
	require.Equal(t, before, after, "the admin's receiver's registration is unchanged")

	resp, body = post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"pause"}, "stream": {stream}, "id": {"billing"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)

	admin := client(t)
	login(t, admin, srv)
	_, body = get(t, admin, srv.URL+"/ui/registration?stream=tenant%2F42%2Forders&id=audit")
	require.Contains(t, body, `id="pause"`, "an admin may act on it")
	require.NotContains(t, body, `id="rotate-secret"`, "its secret is its subscription's: a rotation is refused to every token")
}

// TestAPauseFromATokensSessionNamesTheToken: a pause from the page, asked
// in a session of a token of herald tokens create with no "by", is
// recorded as that token's (name and id), as the APIs record it.
func TestAPauseFromATokensSessionNamesTheToken(t *testing.T) {
	s := seeded(t)
	_, srv := serve(t, s, testToken, seedView)
	secret, id := tenantToken(t, s, store.RoleOperator, "orders/2")
	c := client(t)
	csrf, _ := loginAs(t, c, srv, secret)
	resp, body := post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"pause"}, "stream": {"orders/2"}, "id": {"legacy"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	evs, err := s.Evidence(t.Context(), "orders/2", "legacy", 1)
	require.NoError(t, err)
	require.Equal(t, "paused by tenant 2 ("+id+")", evs[0].Error)
}
