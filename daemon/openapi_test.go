//go:build openapi

// The OpenAPI tests validate real requests and answers with
// libopenapi-validator, whose compiling is about half the CPU of a cold
// build of every test here: .ci/run runs them (./test.sh -tags openapi),
// the README's ./test.sh does not.

package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// churning is a store where another process changes a registration or a
// subscription between every read and the write that would update it.
type churning struct {
	*memory.Store
	n int
}

func (c *churning) Update(ctx context.Context, r, was store.Registration) (store.Registration, error) {
	c.n++
	now, err := c.Get(ctx, r.Stream, r.ID)
	if err == nil {
		now.URL = fmt.Sprintf("https://moved.example/%d", c.n)
		_, err = c.Register(ctx, now.Registration)
	}
	if err != nil {
		return store.Registration{}, err
	}
	return c.Store.Update(ctx, r, was)
}

func (c *churning) Subscribe(ctx context.Context, sub, was store.Subscription) (store.SubscriptionStatus, error) {
	c.n++
	now := sub
	now.URL = fmt.Sprintf("https://moved.example/%d", c.n)
	if list, err := c.Subscriptions(ctx, sub.Prefix); err == nil && len(list) > 0 {
		_, err = c.Store.Subscribe(ctx, now, list[0].Subscription)
		if err != nil {
			return store.SubscriptionStatus{}, err
		}
	}
	return c.Store.Subscribe(ctx, sub, was)
}

// documented returns the document's "METHOD /path" routes, each with its
// documented statuses.
func documented(t *testing.T) map[string][]string {
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(openAPIYAML, &doc))
	out := map[string][]string{}
	for path, item := range doc.Paths {
		for method, node := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Responses map[string]any `yaml:"responses"`
			}
			require.NoError(t, node.Decode(&op))
			for code := range op.Responses {
				out[strings.ToUpper(method)+" "+path] = append(out[strings.ToUpper(method)+" "+path], code)
			}
		}
	}
	return out
}

// The OpenAPI document and the handlers agree: every route of one is a
// route of the other, and for every route each documented status is
// produced by a real request whose request and response validate against
// the document (libopenapi-validator, OpenAPI 3.1, JSON Schema 2020-12).
func TestOpenAPIMatchesTheHandlers(t *testing.T) {
	v := docValidator(t)
	ok, verrs := v.ValidateDocument()
	require.True(t, ok, "%v", verrs)

	s := memory.New()
	_, err := s.Register(t.Context(), push.Registration{Stream: "orders/1", ID: "parked", Namespace: "webhook", URL: "https://p.example/"})
	require.NoError(t, err)
	// A registration parked for real, for the bulk unpark's answer.
	_, err = s.Append(t.Context(), "held/1", journal.Entry{ID: "held-1", Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.Register(t.Context(), push.Registration{Stream: "held/1", ID: "p", Namespace: "webhook", URL: "https://h.example/"})
	require.NoError(t, err)
	held, err := s.Due(t.Context(), store.DueQuery{At: t0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, held.Registrations, 1)
	require.NoError(t, s.Park(t.Context(), held.Registrations[0].Claim(), 1, store.Evidence{At: t0, Event: store.EventParked, Seq: 1, Status: 410}))
	// A registration that acknowledged 2 records, for resend.
	_, err = s.Append(t.Context(), "resend/1", journal.Entry{ID: "resend-1", Kind: "k", Payload: []byte(`{}`)}, journal.Entry{ID: "resend-2", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.Register(t.Context(), push.Registration{Stream: "resend/1", ID: "r", Namespace: "webhook", URL: "https://r.example/", NextSeq: 3})
	require.NoError(t, err)
	// testToken is HERALD_API_TOKEN, an operator; admin HERALD_ADMIN_TOKEN.
	const admin = "5a1e0c9d7f3b2846e1d0c9b8a7f6e5d4"
	sd, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()}, APIToken: testToken, AdminToken: admin,
		Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(sd.APIHandler())
	defer srv.Close()
	producer, reader := tokenIn(t, s, store.RoleProducer), tokenIn(t, s, store.RoleReader)
	scoped := tokenIn(t, s, store.RoleOperator, "tenant/")
	_, revocable, err := store.MintToken("to revoke", store.RoleReader, nil, t0)
	require.NoError(t, err)
	require.NoError(t, s.CreateToken(t.Context(), revocable))

	// A store that fails every call, for the 500s.
	broken := seedtest.SQLite(t)
	require.NoError(t, broken.Close())
	d, err := New(Options{Store: broken, Transport: noTransport, Projections: []push.Projection{webhook.New()}, APIToken: testToken, AdminToken: admin,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	failing := httptest.NewServer(d.APIHandler())
	defer failing.Close()

	// A daemon whose network guard refuses http, for the warnings.
	tr, err := transport.New(transport.Options{})
	require.NoError(t, err)
	gd, err := New(Options{Store: memory.New(), Transport: tr, Projections: []push.Projection{webhook.New()}, APIToken: testToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	guarded := httptest.NewServer(gd.APIHandler())
	defer guarded.Close()

	// A registration and a subscription another process changes between
	// every read and write, for the 409s.
	churned := &churning{Store: memory.New()}
	_, err = churned.Register(t.Context(), push.Registration{Stream: "orders/1", ID: "billing", Namespace: "webhook", URL: "https://billing.example/",
		Config: push.Config(`{"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`)})
	require.NoError(t, err)
	cd, err := New(Options{Store: churned, Transport: noTransport, Projections: []push.Projection{webhook.New()}, APIToken: testToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	contended := httptest.NewServer(cd.APIHandler())
	defer contended.Close()

	// A held key, and a registration naming it pinned to draft-cavage, for
	// the key routes.
	_, rsaPEM := keytest.RSA(t)
	_, edPEM := keytest.Ed25519(t)
	const keyID = "https://a.example/u/alice#main-key"
	keyBody := fmt.Sprintf(`{"key_id": %q, "private_key": %q}`, keyID, rsaPEM)
	otherKeyBody := strings.Replace(keyBody, "alice", "nobody", 1)
	edKeyBody := fmt.Sprintf(`{"key_id": %q, "private_key": %q}`, keyID, edPEM)
	_, err = s.Register(t.Context(), push.Registration{Stream: "actor/alice", ID: "bob", Namespace: "activitypub", URL: "https://b.example/inbox",
		Config: push.Config(`{"key_id":"` + keyID + `","signature_scheme":"cavage"}`)})
	require.NoError(t, err)
	keyQuery := "/v1/key?key_id=" + url.QueryEscape(keyID)

	reg := `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
	subReq := `{"stream_prefix": "tenant/9/", "id": "t9", "namespace": "webhook", "url": "https://t9.example/", "from": "head", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
	json := "application/json"
	cases := []struct {
		method, path, ct, tk string
		body                 string
		code                 int
	}{
		{"GET", "/v1/openapi.json", "", testToken, "", 200},
		{"POST", "/v1/records", json, testToken, oneRecord, 201},
		{"POST", "/v1/records", json, testToken, oneRecord, 200},
		{"POST", "/v1/records", json, testToken, `{"stream": "orders/1", "records": [{"id": "evt-t", "kind": "k", "payload": {}, "traceparent": "` + testTraceparent + `", "tracestate": "a=b"}]}`, 201},
		{"POST", "/v1/records", json, testToken, `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "other", "payload": {}}]}`, 409},
		{"POST", "/v1/records", json, testToken, `{"stream": "orders/1", "records": [{"id": "evt-2", "kind": "k", "payload": {"x": "` + strings.Repeat("y", MaxBody) + `"}}]}`, 413},
		{"POST", "/v1/records", "text/plain", testToken, oneRecord, 415},
		{"POST", "/v1/records", json, testToken, `{"stream": "orders/1", "records": [{"id": "", "kind": "k"}]}`, 400},
		{"GET", "/v1/records/status?id=evt-1", "", testToken, "", 200},
		{"GET", "/v1/records/status?stream=orders/1&seq=1", "", testToken, "", 200},
		{"GET", "/v1/records/status?id=nope", "", testToken, "", 404},
		{"GET", "/v1/records/status?seq=1", "", testToken, "", 400},
		{"GET", "/v1/status", "", testToken, "", 200},
		{"GET", "/v1/status?namespace=webhook", "", testToken, "", 400},
		{"POST", "/v1/registrations", json, testToken, reg, 201},
		{"POST", "/v1/registrations", json, testToken, strings.Replace(reg, `"config"`, `"retry_schedule": ["5s", "10h"], "retry_for": "3d", "max_attempts": 40, "config"`, 1), 200},
		{"POST", "/v1/registrations", json, testToken, strings.Replace(reg, `"config"`, `"rate": "600/min", "config"`, 1), 200},
		{"POST", "/v1/registrations", json, testToken, strings.Replace(reg, `"config"`, `"rate": "600 per minute", "config"`, 1), 400},
		{"POST", "/v1/registrations", json, testToken, `{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "config": {"headers": {"Host": "a"}}}`, 400},
		{"POST", "/v1/registrations", json, testToken, `{"stream": "orders/1", "id": "made", "namespace": "webhook", "url": "https://x.example/", "config": {"headers": {"X-Tenant": "42"}}}`, 201},
		{"POST", "/v1/registrations", json, testToken, `{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "kinds": ["` + strings.Repeat("k", MaxBody) + `"]}`, 413},
		{"POST", "/v1/registrations", "text/plain", testToken, reg, 415},
		{"GET", "/v1/registrations?stream=orders/1", "", testToken, "", 200},
		{"GET", "/v1/registrations?parked=maybe", "", testToken, "", 400},
		{"GET", "/v1/registration?stream=orders/1&id=billing", "", testToken, "", 200},
		{"GET", "/v1/registration?stream=orders/1&id=nobody", "", testToken, "", 404},
		{"GET", "/v1/registration?stream=orders/1&id=", "", testToken, "", 400},
		{"POST", "/v1/registration/unpark?stream=orders/1&id=parked", "", testToken, "", 200},
		{"POST", "/v1/registration/unpark?stream=orders/1&id=nobody", "", testToken, "", 404},
		{"POST", "/v1/registration/unpark?stream=orders/1&id=", "", testToken, "", 400},
		{"POST", "/v1/registration/pause?stream=orders/1&id=billing&by=alice&reason=deploy", "", testToken, "", 200},
		{"POST", "/v1/registration/pause?stream=orders/1&id=billing&by=a%0Ab", "", testToken, "", 400},
		{"POST", "/v1/registration/pause?stream=orders/1&id=nobody", "", testToken, "", 404},
		{"GET", "/v1/registration?stream=orders/1&id=billing", "", testToken, "", 200},
		{"POST", "/v1/registration/resume?stream=orders/1&id=billing&by=bob", "", testToken, "", 200},
		{"POST", "/v1/registration/resume?stream=orders/1&id=billing&reason=x", "", testToken, "", 400},
		{"POST", "/v1/registration/resume?stream=orders/1&id=nobody", "", testToken, "", 404},
		{"POST", "/v1/registration/resend?stream=resend/1&id=r&seq=2&by=alice", "", testToken, "", 202},
		{"POST", "/v1/registration/resend?stream=resend/1&id=r&seq=2&by=bob", "", testToken, "", 202}, // queued already: "queued": false
		{"POST", "/v1/registration/resend?stream=resend/1&id=r&seq=3", "", testToken, "", 400},
		{"POST", "/v1/registration/resend?stream=resend/1&id=r&seq=two", "", testToken, "", 400},
		{"POST", "/v1/registration/resend?stream=resend/1&id=nobody&seq=1", "", testToken, "", 404},
		{"POST", "/v1/registration/resend?stream=resend/1&id=r&seq=1", "", reader, "", 403},
		{"POST", "/v1/registrations/unpark?stream=held/1&namespace=webhook", "", testToken, "", 200},
		{"POST", "/v1/registrations/unpark?stream=orders%0A1", "", testToken, "", 400},
		{"POST", "/v1/registration/rotate-secret?stream=orders/1&id=billing&expire_old=1h", "", testToken, "", 200},
		{"POST", "/v1/registration/rotate-secret?stream=orders/1&id=billing&expire_old=-1h", "", testToken, "", 400},
		{"POST", "/v1/registration/rotate-secret?stream=orders/1&id=billing&expire_old=7d", "", testToken, "", 200},
		{"POST", "/v1/registration/rotate-secret?stream=orders/1&id=billing&expire_old=31d", "", testToken, "", 400},
		{"POST", "/v1/registration/rotate-secret?stream=orders/1&id=nobody", "", testToken, "", 404},
		{"DELETE", "/v1/registration?stream=orders/1&id=billing", "", testToken, "", 204},
		{"DELETE", "/v1/registration?stream=orders/1&id=billing", "", testToken, "", 404},
		{"DELETE", "/v1/registration?stream=orders/1&id=", "", testToken, "", 400},
		// Roles and scopes.
		{"POST", "/v1/records", json, scoped, oneRecord, 404},
		{"GET", "/v1/records/status?id=evt-1", "", producer, "", 403},
		{"GET", "/v1/status", "", scoped, "", 403},
		{"POST", "/v1/registrations", json, reader, reg, 403},
		{"POST", "/v1/registrations", json, scoped, reg, 404},
		{"GET", "/v1/registrations", "", producer, "", 403},
		{"GET", "/v1/registration?stream=orders/1&id=billing", "", producer, "", 403},
		{"DELETE", "/v1/registration?stream=orders/1&id=billing", "", reader, "", 403},
		{"POST", "/v1/registration/unpark?stream=orders/1&id=parked", "", reader, "", 403},
		{"POST", "/v1/registrations/unpark", "", reader, "", 403},
		// Subscriptions.
		{"POST", "/v1/subscriptions", json, testToken, subReq, 200},
		{"POST", "/v1/subscriptions", json, testToken, strings.Replace(subReq, "tenant/9/", "tenant/9", 1), 400},
		{"POST", "/v1/subscriptions", json, testToken, strings.Replace(subReq, `"from": "head"`, `"kinds": ["`+strings.Repeat("k", MaxBody)+`"]`, 1), 413},
		{"POST", "/v1/subscriptions", "text/plain", testToken, subReq, 415},
		{"POST", "/v1/subscriptions", json, scoped, subReq, 403},
		{"GET", "/v1/subscriptions?streams=true", "", testToken, "", 200},
		{"GET", "/v1/subscriptions?streams=maybe", "", testToken, "", 400},
		{"GET", "/v1/subscriptions", "", producer, "", 403},
		{"DELETE", "/v1/subscription?stream_prefix=tenant/9/&id=t9", "", testToken, "", 200},
		{"DELETE", "/v1/subscription?stream_prefix=tenant/9/&id=t9", "", testToken, "", 404},
		{"DELETE", "/v1/subscription?stream_prefix=tenant/9/", "", testToken, "", 400},
		{"DELETE", "/v1/subscription?stream_prefix=tenant/9/&id=t9", "", reader, "", 403},
		// Tokens.
		{"GET", "/v1/tokens", "", admin, "", 200},
		{"GET", "/v1/tokens?role=admin", "", admin, "", 400},
		{"GET", "/v1/tokens", "", testToken, "", 403},
		{"POST", "/v1/tokens", json, admin, `{"name": "ci", "role": "producer"}`, 201},
		{"POST", "/v1/tokens", json, admin, `{"name": "t42", "role": "reader", "scope": ["tenant/42/"]}`, 201},
		{"POST", "/v1/tokens", json, admin, `{"name": "ci", "role": "root"}`, 400},
		{"POST", "/v1/tokens", json, testToken, `{"name": "ci", "role": "producer"}`, 403},
		{"POST", "/v1/tokens", "text/plain", admin, `{"name": "ci", "role": "producer"}`, 415},
		{"POST", "/v1/token/revoke?id=" + revocable.ID, "", admin, "", 200},
		{"POST", "/v1/token/revoke", "", admin, "", 400},
		{"POST", "/v1/token/revoke?id=x", "", testToken, "", 403},
		{"POST", "/v1/token/revoke?id=tok_none", "", admin, "", 404},
		{"POST", "/v1/keys", json, admin, keyBody, 201},
		{"POST", "/v1/keys", json, admin, keyBody, 409},
		{"POST", "/v1/keys", json, admin, `{"key_id": "/u/alice#k", "private_key": "x"}`, 400},
		{"POST", "/v1/keys", json, testToken, keyBody, 403},
		{"POST", "/v1/keys", "text/plain", admin, keyBody, 415},
		{"GET", "/v1/keys", "", testToken, "", 200},
		{"GET", "/v1/keys?id=x", "", admin, "", 400},
		{"GET", "/v1/keys", "", reader, "", 403},
		{"POST", "/v1/key/rotate", json, admin, keyBody, 200},
		{"POST", "/v1/key/rotate", json, admin, otherKeyBody, 404},
		{"POST", "/v1/key/rotate", json, admin, edKeyBody, 409},
		{"POST", "/v1/key/rotate", json, admin, `{"key_id": "` + keyID + `"}`, 400},
		{"POST", "/v1/key/rotate", json, testToken, keyBody, 403},
		{"POST", "/v1/key/rotate", "text/plain", admin, keyBody, 415},
		{"DELETE", keyQuery, "", admin, "", 409},
		{"DELETE", keyQuery + "&force=maybe", "", admin, "", 400},
		{"DELETE", "/v1/key", "", admin, "", 400},
		{"DELETE", keyQuery, "", testToken, "", 403},
		{"DELETE", keyQuery + "&force=true", "", admin, "", 200},
		{"DELETE", keyQuery, "", admin, "", 404},
	}
	covered := map[string][]string{}
	var handlerRoutes []string
	for pattern := range d.apiRoutes() {
		handlerRoutes = append(handlerRoutes, pattern)
	}
	docRoutes := documented(t)
	// try sends a request to srv with client and requires the answer code,
	// described by the document.
	try := func(srv *httptest.Server, client *http.Client, method, path, ct, tk, body string, code int) {
		t.Helper()
		req := request(t, srv, method, path, ct, tk, body)
		resp, answer := sendWith(t, client, req)
		require.Equal(t, code, resp.StatusCode, "%s %s: %s", method, path, answer)
		requireDescribed(t, v, req, body, resp, answer)

		route := method + " " + strings.SplitN(path, "?", 2)[0]
		require.Contains(t, handlerRoutes, route)
		covered[route] = append(covered[route], fmt.Sprint(code))
	}
	for _, c := range cases {
		try(srv, srv.Client(), c.method, c.path, c.ct, c.tk, c.body, c.code)
	}
	try(guarded, guarded.Client(), "POST", "/v1/registrations", json, testToken, strings.Replace(reg, "https:", "http:", 1), 201)
	try(contended, contended.Client(), "POST", "/v1/registration/rotate-secret?stream=orders/1&id=billing", "", testToken, "", 409)
	try(contended, contended.Client(), "POST", "/v1/registrations", json, testToken, reg, 409)
	_, err = churned.Store.Subscribe(t.Context(), store.Subscription{Prefix: "tenant/9/", ID: "t9", Namespace: "webhook", URL: "https://t9.example/", FromHead: true}, store.Subscription{})
	require.NoError(t, err)
	try(contended, contended.Client(), "POST", "/v1/subscriptions", json, testToken, subReq, 409)

	// Every route refuses a request without a token (each from an address
	// of its own, so that no throttle counts them together), and answers
	// 500 when the store fails (but the document's own route, which needs
	// no store): one request of each route that would reach the store.
	reach := []struct{ method, path, ct, body string }{
		{"GET", "/v1/openapi.json", "", ""},
		{"POST", "/v1/records", json, oneRecord},
		{"GET", "/v1/records/status?id=evt-1", "", ""},
		{"GET", "/v1/status", "", ""},
		{"POST", "/v1/registrations", json, reg},
		{"GET", "/v1/registrations", "", ""},
		{"GET", "/v1/registration?stream=orders/1&id=billing", "", ""},
		{"DELETE", "/v1/registration?stream=orders/1&id=billing", "", ""},
		{"POST", "/v1/registration/unpark?stream=orders/1&id=parked", "", ""},
		{"POST", "/v1/registration/pause?stream=orders/1&id=billing", "", ""},
		{"POST", "/v1/registration/resume?stream=orders/1&id=billing", "", ""},
		{"POST", "/v1/registration/resend?stream=resend/1&id=r&seq=1", "", ""},
		{"POST", "/v1/registrations/unpark", "", ""},
		{"POST", "/v1/registration/rotate-secret?stream=orders/1&id=billing", "", ""},
		{"POST", "/v1/subscriptions", json, subReq},
		{"GET", "/v1/subscriptions", "", ""},
		{"DELETE", "/v1/subscription?stream_prefix=tenant/9/&id=t9", "", ""},
		{"GET", "/v1/tokens", "", ""},
		{"POST", "/v1/tokens", json, `{"name": "ci", "role": "producer"}`},
		{"POST", "/v1/token/revoke?id=x", "", ""},
		{"POST", "/v1/keys", json, keyBody},
		{"GET", "/v1/keys", "", ""},
		{"POST", "/v1/key/rotate", json, keyBody},
		{"DELETE", keyQuery, "", ""},
	}
	var reached []string
	for i, r := range reach {
		route := r.method + " " + strings.SplitN(r.path, "?", 2)[0]
		reached = append(reached, route)
		try(srv, clientFrom(fmt.Sprintf("127.0.2.%d", i+1), 10*time.Second), r.method, r.path, r.ct, "", r.body, http.StatusUnauthorized)
		if route == "GET /v1/openapi.json" {
			continue
		}
		token := testToken
		if operator.Access[route].Role == store.RoleAdmin {
			token = admin
		}
		try(failing, failing.Client(), r.method, r.path, r.ct, token, r.body, http.StatusInternalServerError)
	}
	require.ElementsMatch(t, handlerRoutes, reached, "one request of each route")
	for route, codes := range docRoutes {
		require.Contains(t, handlerRoutes, route, "the document has %s, the handler does not", route)
		for _, code := range codes {
			require.True(t, slices.Contains(covered[route], code), "%s %s is documented but no request here produced it", route, code)
		}
	}
	for _, route := range handlerRoutes {
		require.Contains(t, docRoutes, route, "the handler serves %s, the document does not", route)
		for _, code := range covered[route] {
			require.Contains(t, docRoutes[route], code, "%s answered %s, which the document does not list", route, code)
		}
	}
}

// Each operation's x-herald-role and x-herald-scoped are what
// operator.Access says of its route.
func TestOpenAPIRolesAreTheAccessTable(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(openAPIYAML, &doc))
	n := 0
	for path, item := range doc.Paths {
		for method, node := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Role   store.Role `yaml:"x-herald-role"`
				Scoped *bool      `yaml:"x-herald-scoped"`
			}
			require.NoError(t, node.Decode(&op))
			route := strings.ToUpper(method) + " " + path
			need, ok := operator.Access[route]
			require.True(t, ok, route)
			require.Equal(t, need.Role, op.Role, route)
			require.NotNil(t, op.Scoped, "%s has x-herald-scoped", route)
			require.Equal(t, need.Scoped, *op.Scoped, route)
			n++
		}
	}
	require.Equal(t, 24, n)
}

// docValidator validates requests and answers against the document, an
// OpenAPI 3.1 one.
func docValidator(t *testing.T) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(openAPIJSON)
	require.NoError(t, err)
	require.Equal(t, "3.1.0", doc.GetVersion())
	v, errs := validator.NewValidator(doc)
	require.Empty(t, errs)
	return v
}

// requireDescribed requires that the document describes resp, the answer
// to req (sent with reqBody), whose body was read as body.
func requireDescribed(t *testing.T, v validator.Validator, req *http.Request, reqBody string, resp *http.Response, body string) {
	t.Helper()
	// The validator reads the request again, so give it the body anew.
	vreq, err := http.NewRequest(req.Method, "http://herald.test"+req.URL.RequestURI(), strings.NewReader(reqBody))
	require.NoError(t, err)
	vreq.Header = req.Header.Clone()
	resp.Body = io.NopCloser(strings.NewReader(body))
	ok, verrs := v.ValidateHttpResponse(vreq, resp)
	require.True(t, ok, "%s %s answered %d %s, which the document does not describe: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, body, describe(verrs))
}

// registrationValidator returns whether the document's validator passes a
// POST /v1/registrations of a body, and its errors described.
func registrationValidator(t *testing.T) func(body string) (bool, string) {
	v := docValidator(t)
	return func(body string) (bool, string) {
		req, err := http.NewRequest(http.MethodPost, "http://herald.test/v1/registrations", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer tok")
		ok, verrs := v.ValidateHttpRequest(req)
		return ok, describe(verrs)
	}
}

func describe(errs []*valerrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "%s (%s); ", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "[%s] ", se.Reason)
		}
	}
	return b.String()
}

// Each namespace's config schema is its projection's Config: the same keys
// (the struct's JSON names, so a field added to one and not the other
// fails here), and a request the handler takes passes the document, one
// it refuses (a value of the wrong type, an unknown key) does not.
func TestOpenAPIConfigSchemasAreTheProjectionsConfigs(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(openAPIYAML, &doc))
	for schema, config := range map[string]reflect.Type{
		"WebhookConfig":     reflect.TypeFor[webhook.Config](),
		"ActivityPubConfig": reflect.TypeFor[activitypub.Config](),
		"A2AConfig":         reflect.TypeFor[a2a.Config](),
		"CloudEventsConfig": reflect.TypeFor[cloudevents.Config](),
	} {
		var documented, fields []string
		for k := range doc.Components.Schemas[schema].Properties {
			documented = append(documented, k)
		}
		for _, t := range []reflect.Type{config, reflect.TypeFor[transport.Endpoint]()} {
			for f := range t.Fields() {
				if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); !f.Anonymous {
					fields = append(fields, name)
				}
			}
		}
		require.ElementsMatch(t, fields, documented, schema)
	}

	passes := registrationValidator(t)
	d, err := New(Options{Store: memory.New(), Transport: noTransport, APIToken: testToken, Now: func() time.Time { return t0 },
		Projections: []push.Projection{webhook.New(), activitypub.New(), a2a.New(), cloudevents.New()},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(d.APIHandler())
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		namespace, config string
		valid             bool
		code              int
		field             string
	}{
		{"webhook", `{"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], "envelope": true}`, true, http.StatusCreated, ""},
		{"webhook", `{"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], "envelope": "yes"}`, false, http.StatusBadRequest, "config.envelope"},
		{"webhook", `{"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], "wrap": true}`, false, http.StatusBadRequest, `unknown key "wrap"`},
		{"a2a", `{"token": "t-1", "auth_scheme": "Bearer", "credentials": "c"}`, true, http.StatusCreated, ""},
		{"a2a", `{"token": "t-1", "authentication": {"scheme": "Bearer", "credentials": "c"}}`, false, http.StatusBadRequest, `unknown key "authentication"`},
		{"cloudevents", `{"source": "https://shop.example", "structured": true}`, true, http.StatusCreated, ""},
		{"cloudevents", `{"structured": true}`, false, http.StatusBadRequest, "source"},
		// A key held once signs (a projection without WithKeys checks
		// the shape only).
		{"activitypub", `{"key_id": "https://shop.example/actor#main-key"}`, true, http.StatusCreated, ""},
	} {
		body := `{"stream": "orders/` + c.namespace + `", "id": "r", "namespace": "` + c.namespace + `", "url": "https://r.example/", "config": ` + c.config + `}`
		ok, verrs := passes(body)
		require.Equal(t, c.valid, ok, "%s: %v", c.config, verrs)
		code, answer := call(t, srv, http.MethodPost, "/v1/registrations", "application/json", testToken, body)
		require.Equal(t, c.code, code, "%s: %s", c.config, answer)
		if c.field != "" {
			require.Contains(t, errorOf(t, answer), c.field)
		}
	}
}

// The document's pattern for a registration's rate is the handler's rule:
// a request the validator passes is stored, one it refuses is a 400 naming
// rate.
func TestOpenAPIRatePatternIsTheHandlers(t *testing.T) {
	passes := registrationValidator(t)
	srv := apiServer(t, memory.New(), testToken)
	for _, c := range []struct {
		rate  string
		valid bool
	}{
		{"10/s", true}, {"600/min", true}, {"1/h", true}, {"10000/s", true}, {"9999/h", true},
		{"10001/s", false}, {"0/s", false}, {"010/s", false}, {"10/sec", false}, {"10", false}, {" 10/s", false},
		{"10/S", false}, {"", false}, {"1.5/s", false}, {"10/m", false},
	} {
		body := `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/", "rate": "` + c.rate +
			`", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
		ok, verrs := passes(body)
		require.Equal(t, c.valid, ok, "%q: %v", c.rate, verrs)
		code, answer := call(t, srv, http.MethodPost, "/v1/registrations", "application/json", testToken, body)
		if c.valid {
			require.Contains(t, []int{http.StatusCreated, http.StatusOK}, code, "%q: %s", c.rate, answer)
		} else {
			require.Equal(t, http.StatusBadRequest, code, "%q: %s", c.rate, answer)
			require.Contains(t, errorOf(t, answer), "invalid rate", c.rate)
		}
	}
}

// The document's bounds on a registration's spans and ceiling are the
// handler's: what the document refuses the handler refuses naming the
// field, and what the handler stores the document passes. A span the
// pattern passes may still be out of the range its description gives.
func TestOpenAPIBoundsAreTheHandlers(t *testing.T) {
	passes := registrationValidator(t)
	srv := apiServer(t, memory.New(), testToken)
	for _, c := range []struct {
		field, value string
		doc, stored  bool
	}{
		{"retain_max", `"30d"`, true, true}, {"retain_max", `"36h"`, true, true}, {"retain_max", `"1h30m"`, true, true},
		{"retain_max", `"1d1h"`, false, false}, {"retain_max", `"0h"`, true, false}, {"retain_max", `"99999d"`, true, false},
		{"retain_max", `"3651d"`, true, false}, {"retain_max", `"-1d"`, false, false},
		{"max_attempts", `1`, true, true}, {"max_attempts", `100000`, true, true},
		{"max_attempts", `0`, false, false}, {"max_attempts", `100001`, false, false}, {"max_attempts", `-1`, false, false},
		{"retry_for", `"3d"`, true, true}, {"retry_for", `"1d12h"`, false, false}, {"retry_for", `"0s"`, true, false},
		{"retry_schedule", `["5s", "2d"]`, true, true}, {"retry_schedule", `["5s", "1d2h"]`, false, false}, {"retry_schedule", `["8d"]`, true, false},
	} {
		body := `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/", "` + c.field + `": ` + c.value +
			`, "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
		ok, verrs := passes(body)
		require.Equal(t, c.doc, ok, "%s %s: %v", c.field, c.value, verrs)
		code, answer := call(t, srv, http.MethodPost, "/v1/registrations", "application/json", testToken, body)
		if c.stored {
			require.Contains(t, []int{http.StatusCreated, http.StatusOK}, code, "%s %s: %s", c.field, c.value, answer)
		} else {
			require.Equal(t, http.StatusBadRequest, code, "%s %s: %s", c.field, c.value, answer)
			require.Contains(t, errorOf(t, answer), "invalid "+c.field, "%s %s", c.field, c.value)
		}
	}
}

// A null is absent to the handlers for every optional key of a
// registration or a subscription (README: a rate "absent or null"); the
// document passes what they take, so a client checked against it may send
// null as they may.
func TestOpenAPIPassesTheNullsTheHandlersTakeAsAbsent(t *testing.T) {
	v := docValidator(t)
	srv := apiServer(t, memory.New(), testToken)
	const secrets = `"config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`
	shared := []string{"on_4xx", "kinds", "window", "retain_max", "retry_schedule", "max_attempts", "retry_for", "config"}
	for _, c := range []struct {
		path, body string
		fields     []string
	}{
		{"/v1/registrations", `"stream": "orders/1", "id": "billing"`, append([]string{"from_seq", "rate"}, shared...)},
		{"/v1/subscriptions", `"stream_prefix": "orders/", "id": "billing"`, append([]string{"from"}, shared...)},
	} {
		for _, field := range c.fields {
			body := `{` + c.body + `, "namespace": "webhook", "url": "https://billing.example/", "` + field + `": null`
			if field != "config" {
				body += ", " + secrets
			}
			body += "}"
			code, answer := call(t, srv, http.MethodPost, c.path, "application/json", testToken, body)
			require.Contains(t, []int{http.StatusCreated, http.StatusOK}, code, "%s %s null: %s", c.path, field, answer)
			req, err := http.NewRequest(http.MethodPost, "http://herald.test"+c.path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer tok")
			ok, verrs := v.ValidateHttpRequest(req)
			require.True(t, ok, "%s %s null is stored, and the document refuses it: %s", c.path, field, describe(verrs))
		}
	}
}

// The document's bounds on a request's lists are the handlers': an append
// takes journal.MaxBatch records and refuses one more (the document said
// 1,000 while the handler took 10,000), and a registration store.MaxKinds
// kinds; the handler refuses one more naming the field.
func TestOpenAPIListBoundsAreTheHandlers(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					MaxItems int `yaml:"maxItems"`
				} `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(openAPIYAML, &doc))
	schemas := doc.Components.Schemas
	require.Equal(t, journal.MaxBatch, schemas["AppendRequest"].Properties["records"].MaxItems)
	require.Equal(t, store.MaxKinds, schemas["RegistrationRequest"].Properties["kinds"].MaxItems)
	require.Equal(t, store.MaxKinds, schemas["SubscriptionRequest"].Properties["kinds"].MaxItems)
	srv := apiServer(t, memory.New(), testToken)
	list := func(n int, item func(i int) string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = item(i)
		}
		return strings.Join(items, ",")
	}
	records := func(n int) string {
		return `{"stream": "orders/1", "records": [` + list(n, func(i int) string { return fmt.Sprintf(`{"id": "r%d", "kind": "k", "payload": %d}`, i, i) }) + `]}`
	}
	kinds := func(n int) string {
		return `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/", "kinds": [` +
			list(n, func(i int) string { return fmt.Sprintf(`"k%d"`, i) }) + `], "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
	}
	for _, c := range []struct {
		path, over, at, field string
	}{
		{"/v1/records", records(journal.MaxBatch + 1), records(journal.MaxBatch), "entries"},
		{"/v1/registrations", kinds(store.MaxKinds + 1), kinds(store.MaxKinds), "kinds"},
	} {
		code, answer := call(t, srv, http.MethodPost, c.path, "application/json", testToken, c.over)
		require.Equal(t, http.StatusBadRequest, code, answer)
		require.Contains(t, errorOf(t, answer), c.field)
		code, answer = call(t, srv, http.MethodPost, c.path, "application/json", testToken, c.at)
		require.Equal(t, http.StatusCreated, code, answer)
	}
}
