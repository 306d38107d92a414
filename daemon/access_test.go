package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// The tenants of the access tests: ours is scoped to "tenant/42/"; theirs,
// "tenant/420/", sorts right after it; absent, in our scope, holds nothing.
const (
	ours   = "tenant/42/orders"
	theirs = "tenant/420/orders"
	absent = "tenant/42/nothing"
	// nowhere, out of our scope, does not exist.
	nowhere = "tenant/421/orders"
)

// tenantsStore holds, in ours and theirs, three records (ids "<stream>#n")
// and registration "billing" parked at #2.
func tenantsStore(t *testing.T) *memory.Store {
	s := memory.New()
	ctx := t.Context()
	for _, stream := range []string{ours, theirs} {
		for i := 1; i <= 3; i++ {
			_, err := s.Append(ctx, stream, journal.Entry{ID: fmt.Sprintf("%s#%d", stream, i), Kind: "k", Payload: []byte(`{}`)})
			require.NoError(t, err)
		}
		_, err := s.Register(ctx, push.Registration{Stream: stream, ID: "billing", Namespace: "webhook", URL: "https://billing.example/hooks"})
		require.NoError(t, err)
		batch, err := s.Due(ctx, store.DueQuery{At: t0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
		require.NoError(t, s.Park(ctx, batch.Registrations[0].Claim(), 2, store.Evidence{At: t0, Event: store.EventParked, Status: 410}))
	}
	return s
}

// tokenIn stores a token of role and scope in s and returns its secret.
func tokenIn(t *testing.T, s store.TokenStore, role store.Role, scope ...string) string {
	t.Helper()
	secret, tok, err := store.MintToken(string(role)+" "+strings.Join(scope, ","), role, scope, t0)
	require.NoError(t, err)
	require.NoError(t, s.CreateToken(t.Context(), tok))
	return secret
}

// tenantServers serve the admin API (with the admin token testToken) and
// the HTTP API of a daemon on s.
func tenantServers(t *testing.T, s store.Backend) (admin, api *httptest.Server) {
	t.Helper()
	d := tenantDaemon(t, s)
	admin, api = httptest.NewServer(d.AdminHandler()), httptest.NewServer(d.APIHandler())
	t.Cleanup(admin.Close)
	t.Cleanup(api.Close)
	return admin, api
}

// tenantDaemon is tenantServers' daemon on s.
func tenantDaemon(t *testing.T, s store.Backend) *Daemon {
	t.Helper()
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()},
		AdminToken: testToken, APIToken: "5a1e0c9d7f3b2846e1d0c9b8a7f6e5d4", Now: func() time.Time { return t0.Add(time.Hour) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	return d
}

// routeCase is one route of either API, asked about stream.
type routeCase struct {
	pattern string
	name    string                         // of the case, when a pattern has two
	creates bool                           // it makes what it names: an absent stream is no twin
	admin   bool                           // served by the admin address, else the API address
	query   func(stream string) url.Values // nil: none
	body    func(stream string) string     // nil: none
	ok      int                            // its answer, on a stream of the token's scope
}

func (c routeCase) do(t *testing.T, admin, api *httptest.Server, token, stream string) (int, string) {
	t.Helper()
	method, path, _ := strings.Cut(c.pattern, " ")
	srv := api
	if c.admin {
		srv = admin
	}
	target := srv.URL + path
	if c.query != nil {
		target += "?" + c.query(stream).Encode()
	}
	var body io.Reader
	if c.body != nil {
		body = strings.NewReader(c.body(stream))
	}
	req, err := http.NewRequestWithContext(t.Context(), method, target, body)
	require.NoError(t, err)
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, got := send(t, srv, req)
	return resp.StatusCode, got
}

func key(stream string) url.Values { return url.Values{"stream": {stream}, "id": {"billing"}} }

func keyAnd(name, value string) func(string) url.Values {
	return func(stream string) url.Values {
		q := key(stream)
		q.Set(name, value)
		return q
	}
}

// streamRoutes are the routes about a stream, each named by its pattern in
// operator.Access: a scoped token acts on its own streams only.
var streamRoutes = []routeCase{
	{pattern: "POST /v1/records", creates: true, body: func(s string) string {
		return fmt.Sprintf(`{"stream":%q,"records":[{"id":"new in %s","kind":"k","payload":{}}]}`, s, s)
	}, ok: http.StatusCreated},
	{pattern: "GET /v1/records/status", query: func(s string) url.Values { return url.Values{"id": {s + "#2"}} }, ok: http.StatusOK},
	{pattern: "GET /v1/records/status", name: "by seq", query: func(s string) url.Values { return url.Values{"stream": {s}, "seq": {"2"}} }, ok: http.StatusOK},
	{pattern: "GET /v1/registration", query: key, ok: http.StatusOK},
	{pattern: "DELETE /v1/registration", query: key, ok: http.StatusNoContent},
	{pattern: "POST /v1/registration/unpark", query: key, ok: http.StatusOK},
	{pattern: "POST /v1/registrations", creates: true, body: func(s string) string {
		return fmt.Sprintf(`{"stream":%q,"id":"new","namespace":"webhook","url":"https://new.example/hook","config":{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`, s)
	}, ok: http.StatusCreated},
	{pattern: "GET /v1/evidence", admin: true, query: key, ok: http.StatusOK},
	{pattern: "POST /v1/registration/skip", admin: true, query: keyAnd("to_seq", "3"), ok: http.StatusOK},
	{pattern: "POST /v1/registration/rewind", admin: true, query: keyAnd("to_seq", "1"), ok: http.StatusOK},
}

// TestScopedTokenCannotSeeOrTouchAnotherTenantsStreams: through every route
// about one stream, a token scoped to tenant/42/ acts on its own, and gets
// for another tenant's registration or record the very answer it gets for
// one of its own that does not exist (404, nothing told), changing nothing
// of theirs. A create there (an append, a registration) is the same 404,
// saying the token creates only under its scope, whether theirs exists or
// not.
func TestScopedTokenCannotSeeOrTouchAnotherTenantsStreams(t *testing.T) {
	for _, c := range streamRoutes {
		t.Run(c.pattern+" "+c.name, func(t *testing.T) {
			s := tenantsStore(t)
			admin, api := tenantServers(t, s)
			tok := tokenIn(t, s, store.RoleOperator, "tenant/42/")
			before := snapshot(t, s, theirs)

			code, got := c.do(t, admin, api, tok, theirs)
			require.Equal(t, http.StatusNotFound, code, got)
			if !c.creates {
				_, none := c.do(t, admin, api, tok, absent)
				require.Equal(t, strings.ReplaceAll(none, absent, theirs), got, "the same answer as for a stream of its own that does not exist")
			} else {
				// A create on its own absent stream makes it: the refusal says
				// why, the same whether theirs exists or not.
				require.Contains(t, got, "only on streams under its scope (tenant/42/)")
				_, none := c.do(t, admin, api, tok, nowhere)
				require.Equal(t, strings.ReplaceAll(none, nowhere, theirs), got, "the same answer as for another's stream that does not exist")
			}
			require.Equal(t, before, snapshot(t, s, theirs), "nothing of theirs changed")

			code, got = c.do(t, admin, api, tok, ours)
			require.Equal(t, c.ok, code, got)
		})
	}
}

// snapshot is what a tenant's stream holds: its records and registrations
// with their evidence, as JSON.
func snapshot(t *testing.T, s *memory.Store, stream string) string {
	t.Helper()
	recs, err := s.Read(t.Context(), stream, 1, 100, 0)
	require.NoError(t, err)
	regs, err := s.List(t.Context(), store.ListQuery{Stream: stream})
	require.NoError(t, err)
	var evs [][]store.Evidence
	for _, r := range regs {
		ev, err := s.Evidence(t.Context(), r.Stream, r.ID, 0)
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	b, err := json.Marshal([]any{recs, regs, evs})
	require.NoError(t, err)
	return string(b)
}

// TestScopedTokenListsOnlyItsStreams: the lists and the unpark of many,
// unfiltered or filtered by another tenant's stream, hold only the token's
// streams, however the keys of other tenants sort around them.
func TestScopedTokenListsOnlyItsStreams(t *testing.T) {
	s := tenantsStore(t)
	ctx := t.Context()
	for _, stream := range []string{"tenant/41/z", "tenant/42", "tenant/42/a", "tenant/42/zz", "tenant/43/a"} {
		_, err := s.Register(ctx, push.Registration{Stream: stream, ID: "r", Namespace: "webhook", URL: "https://x.example/"})
		require.NoError(t, err)
	}
	admin, api := tenantServers(t, s)
	tok := tokenIn(t, s, store.RoleOperator, "tenant/42/", "tenant/43/")
	for _, srv := range []*httptest.Server{admin, api} {
		var all []operator.RegistrationView
		require.NoError(t, json.Unmarshal([]byte(mustCall(t, srv, "GET", "/v1/registrations", tok, nil)), &all))
		var got []string
		for _, v := range all {
			got = append(got, v.Stream+" "+v.ID)
		}
		require.Equal(t, []string{"tenant/42/a r", "tenant/42/orders billing", "tenant/42/zz r", "tenant/43/a r"}, got)

		page := mustCall(t, srv, "GET", "/v1/registrations", tok, url.Values{"limit": {"2"}, "after_stream": {"tenant/42/a"}, "after_id": {"r"}})
		require.Contains(t, page, "tenant/42/orders")
		require.Contains(t, page, "tenant/42/zz")
		require.NotContains(t, page, "tenant/43/", "two a page")

		require.JSONEq(t, "[]", mustCall(t, srv, "GET", "/v1/registrations", tok, url.Values{"stream": {theirs}}))
	}
	unparked := mustCall(t, api, "POST", "/v1/registrations/unpark", tok, nil)
	require.Contains(t, unparked, ours)
	require.NotContains(t, unparked, theirs)
	st, err := s.Get(ctx, theirs, "billing")
	require.NoError(t, err)
	require.True(t, st.Parked, "their registration is still parked")
}

// TestScopedProducerIsNotToldWhereATakenIDIs: record ids are one
// namespace; appending another tenant's id is a 409 that names no stream.
func TestScopedProducerIsNotToldWhereATakenIDIs(t *testing.T) {
	s := tenantsStore(t)
	_, api := tenantServers(t, s)
	tok := tokenIn(t, s, store.RoleProducer, "tenant/42/")
	code, body := call(t, api, "POST", "/v1/records", "application/json", tok,
		fmt.Sprintf(`{"stream":%q,"records":[{"id":%q,"kind":"k","payload":{}}]}`, ours, theirs+"#1"))
	require.Equal(t, http.StatusConflict, code, body)
	require.NotContains(t, strings.ReplaceAll(errorOf(t, body), theirs+"#1", ""), "tenant/420", "the id is named, its stream is not")
}

// TestTokenCheckFailureTellsNothingOfTheStore: when the store cannot be
// read, a stored token's request is a 503 that names no database (the
// log does), and a static token still works.
func TestTokenCheckFailureTellsNothingOfTheStore(t *testing.T) {
	broken := seedtest.SQLite(t)
	require.NoError(t, broken.Close())
	_, api := tenantServers(t, broken)
	code, body := adminCall(t, api, "GET", "/v1/openapi.json", store.TokenPrefix+strings.Repeat("a", 43), nil)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.NotContains(t, body, "herald.db")
	require.NotContains(t, body, "sqlite")
	code, body = adminCall(t, api, "GET", "/v1/openapi.json", testToken, nil)
	require.Equal(t, http.StatusOK, code, body)
}

func mustCall(t *testing.T, srv *httptest.Server, method, path, token string, q url.Values) string {
	t.Helper()
	code, body := adminCall(t, srv, method, path, token, q)
	require.Equal(t, http.StatusOK, code, body)
	return body
}

// TestEachRouteNeedsItsRole: every route in operator.Access is refused,
// with 403 naming the role it needs, to a token whose role is below it,
// and let through to one that has it; a scoped token is refused the routes
// about every tenant (hosts, counts, tokens).
func TestEachRouteNeedsItsRole(t *testing.T) {
	s := tenantsStore(t)
	admin, api := tenantServers(t, s)
	metrics := httptest.NewServer(tenantDaemon(t, s).guardedMetrics(false)) // as off loopback
	t.Cleanup(metrics.Close)
	tokens := map[store.Role]string{}
	for _, r := range store.Roles {
		tokens[r] = tokenIn(t, s, r)
	}
	scoped := tokenIn(t, s, store.RoleOperator, "tenant/42/")
	adminOnly := map[string]bool{"GET /v1/hosts": true, "POST /v1/hosts/reset": true, "GET /v1/evidence": true,
		"POST /v1/registration/skip": true, "POST /v1/registration/rewind": true, "GET /v1/tokens": true, "POST /v1/tokens": true, "POST /v1/token/revoke": true}
	var routes []string
	for p := range maps.Keys(operator.Access) {
		if !strings.HasPrefix(p, "page: ") {
			routes = append(routes, p)
		}
	}
	slices.Sort(routes)
	for _, pattern := range routes {
		need := operator.Access[pattern]
		srv := api
		if adminOnly[pattern] {
			srv = admin
		} else if pattern == "GET /metrics" {
			srv = metrics
		}
		method, path, _ := strings.Cut(pattern, " ")
		for _, r := range store.Roles {
			code, body := adminCall(t, srv, method, path, tokens[r], nil)
			if r.Covers(need.Role) {
				require.NotContains(t, body, "no such endpoint", "%s is served", pattern)
				require.NotEqual(t, http.StatusMethodNotAllowed, code, "%s is served", pattern)
				require.NotEqual(t, http.StatusForbidden, code, "%s as %s: %s", pattern, r, body)
				require.NotEqual(t, http.StatusUnauthorized, code, "%s as %s: %s", pattern, r, body)
			} else {
				require.Equal(t, http.StatusForbidden, code, "%s as %s: %s", pattern, r, body)
				require.Contains(t, errorOf(t, body), "needs the "+string(need.Role)+" role")
			}
		}
		code, body := adminCall(t, srv, method, path, scoped, nil)
		if need.Scoped {
			require.NotEqual(t, http.StatusForbidden, code, "%s scoped: %s", pattern, body)
		} else {
			require.Equal(t, http.StatusForbidden, code, "%s scoped: %s", pattern, body)
			if need.Role != store.RoleAdmin { // an admin token has no scope
				require.Contains(t, errorOf(t, body), "needs a token without a scope")
			}
		}
	}
}

// TestEveryAPIRouteIsInTheAccessTable: a route missing from it would be
// refused to every token.
func TestEveryAPIRouteIsInTheAccessTable(t *testing.T) {
	d, err := New(Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()}})
	require.NoError(t, err)
	for pattern := range d.apiRoutes() {
		require.Contains(t, operator.Access, pattern)
	}
}

// TestRevokedTokenIsRefusedAtOnce: a token revoked through the admin API is
// refused (401) at its next request, and the failure counts against its
// client like any bad token.
func TestRevokedTokenIsRefusedAtOnce(t *testing.T) {
	s := tenantsStore(t)
	admin, api := tenantServers(t, s)
	code, body := call(t, admin, "POST", "/v1/tokens", "application/json", testToken, `{"name":"ci","role":"reader"}`)
	require.Equal(t, http.StatusCreated, code, body)
	var ct operator.CreatedToken
	require.NoError(t, json.Unmarshal([]byte(body), &ct))
	require.True(t, strings.HasPrefix(ct.Secret, store.TokenPrefix))
	mustCall(t, api, "GET", "/v1/registrations", ct.Secret, nil)

	list := mustCall(t, admin, "GET", "/v1/tokens", testToken, nil)
	require.Contains(t, list, ct.ID)
	require.NotContains(t, list, ct.Secret, "a list never shows a secret")
	require.Contains(t, list, `"last_used_at"`, "its use was recorded")

	mustCall(t, admin, "POST", "/v1/token/revoke", testToken, url.Values{"id": {ct.ID}})
	code, body = adminCall(t, api, "GET", "/v1/registrations", ct.Secret, nil)
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = adminCall(t, admin, "POST", "/v1/token/revoke", testToken, url.Values{"id": {"tok_none"}})
	require.Equal(t, http.StatusNotFound, code, body)
}

// TestTokenAuthenticationIsThrottled: wrong tokens shaped like herald's
// count against the client as any other, until it is refused with 429,
// even with a valid token.
func TestTokenAuthenticationIsThrottled(t *testing.T) {
	s := tenantsStore(t)
	_, api := tenantServers(t, s)
	good := tokenIn(t, s, store.RoleReader)
	for i := range 10 {
		code, _ := adminCall(t, api, "GET", "/v1/registrations", good+"x", nil)
		require.Equal(t, http.StatusUnauthorized, code, "try %d", i+1)
	}
	code, body := adminCall(t, api, "GET", "/v1/registrations", good, nil)
	require.Equal(t, http.StatusTooManyRequests, code, body)
}

// TestScopedTokenCannotSignWithAKeyHeldForAnother: a key held once is every
// tenant's, so a scoped operator naming it in config.key_id is refused
// (403, nothing registered) where it would have had herald sign its own
// records as that actor; its own private_key is taken, and a registration an
// admin gave the held key keeps it when the tenant updates its URL.
func TestScopedTokenCannotSignWithAKeyHeldForAnother(t *testing.T) {
	pemText, err := os.ReadFile(filepath.Join("..", "testdata", "activitypub", "alice-test-key.pem"))
	require.NoError(t, err)
	s := seedtest.SQLite(t)
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{activitypub.New()},
		AdminToken: testToken, Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	api := httptest.NewServer(d.APIHandler())
	t.Cleanup(api.Close)
	const held = "https://other.example/users/alice#main-key"
	keyBody, _ := json.Marshal(map[string]string{"key_id": held, "private_key": string(pemText)})
	code, body := call(t, api, http.MethodPost, "/v1/keys", "application/json", testToken, string(keyBody))
	require.Equal(t, http.StatusCreated, code, body)
	tenant := tokenIn(t, s, store.RoleOperator, "tenant/42/")
	register := func(token, id, inbox string, config map[string]string) (int, string) {
		b, _ := json.Marshal(map[string]any{"stream": ours, "id": id, "namespace": "activitypub", "url": "https://" + inbox + "/inbox", "config": config})
		return call(t, api, http.MethodPost, "/v1/registrations", "application/json", token, string(b))
	}

	code, body = register(tenant, "forged", "remote.example", map[string]string{"key_id": held})
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, errorOf(t, body), "config.key_id")
	_, err = s.Get(t.Context(), ours, "forged")
	require.ErrorIs(t, err, journal.ErrNotFound, "nothing was registered")

	code, body = register(tenant, "own", "remote.example", map[string]string{"key_id": held, "private_key": string(pemText)})
	require.Equal(t, http.StatusCreated, code, body)

	code, body = register(testToken, "given", "remote.example", map[string]string{"key_id": held})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = register(tenant, "given", "moved.example", map[string]string{"key_id": held})
	require.Equal(t, http.StatusOK, code, body)
	st, err := s.Get(t.Context(), ours, "given")
	require.NoError(t, err)
	require.Equal(t, "https://moved.example/inbox", st.URL)
}

// TestTokenScopeCoveringHeraldsOwnStreamsUnsaidIsRefused: a scope that is a
// prefix of "herald/" ("h", "herald") covers herald/events, every tenant's
// operational events, which its token could read and register a receiver
// for; it is refused naming the scope, no token made, where "herald/" (said)
// and "h/" are taken.
func TestTokenScopeCoveringHeraldsOwnStreamsUnsaidIsRefused(t *testing.T) {
	s := seedtest.SQLite(t)
	admin, _ := tenantServers(t, s)
	create := func(scope ...string) (int, string) {
		b, _ := json.Marshal(map[string]any{"name": "tenant", "role": "reader", "scope": scope})
		return call(t, admin, http.MethodPost, "/v1/tokens", "application/json", testToken, string(b))
	}
	for _, scope := range []string{"h", "her", "herald"} {
		code, body := create("tenant/42/", scope)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.True(t, strings.HasPrefix(errorOf(t, body), "invalid scope[1]: "+strconv.Quote(scope)+" covers herald's own streams"), body)
	}
	tokens, err := s.Tokens(t.Context())
	require.NoError(t, err)
	require.Empty(t, tokens, "nothing was made")
	for _, scope := range []string{"herald/", "h/"} {
		code, body := create(scope)
		require.Equal(t, http.StatusCreated, code, body)
	}
}

// TestAPauseOrResendByATokenNamesIt: a pause, resume or resend asked with
// a token of herald tokens create and no ?by= is recorded as that token's
// (name and id), so that the evidence says which tenant or service it was;
// a ?by= still names whom it says.
func TestAPauseOrResendByATokenNamesIt(t *testing.T) {
	s := tenantsStore(t)
	admin, api := tenantServers(t, s)
	secret := tokenIn(t, s, store.RoleOperator, "tenant/42/")
	toks, err := s.Tokens(t.Context())
	require.NoError(t, err)
	require.Len(t, toks, 1)
	who := "operator tenant/42/ (" + toks[0].ID + ")"
	k := url.Values{"stream": {ours}, "id": {"billing"}}

	mustCall(t, api, "POST", "/v1/registration/pause", secret, k)
	mustCall(t, admin, "POST", "/v1/registration/resume", secret, k)
	mustCall(t, api, "POST", "/v1/registration/pause", secret, keyAnd("by", "alice")(ours))
	evs, err := s.Evidence(t.Context(), ours, "billing", 3)
	require.NoError(t, err)
	require.Equal(t, []string{"paused by alice", "resumed by " + who, "paused by " + who}, []string{evs[0].Error, evs[1].Error, evs[2].Error})
	code, body := adminCall(t, api, "POST", "/v1/registration/resend", secret, keyAnd("seq", "1")(ours))
	require.Equal(t, http.StatusAccepted, code, body)
	var resend struct{ By string }
	require.NoError(t, json.Unmarshal([]byte(body), &resend))
	require.Equal(t, who, resend.By)
}
