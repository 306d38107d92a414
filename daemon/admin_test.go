package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/transport"
)

var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

// parkedStore returns a memory store with one registration parked at #2
// after a 410, behind a head of 3.
func parkedStore(t *testing.T) *memory.Store {
	s := memory.New()
	ctx := t.Context()
	for i := 1; i <= 3; i++ {
		_, err := s.Append(ctx, "orders", journal.Entry{ID: "o-" + string(rune('0'+i)), Kind: "k", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	_, err := s.Register(ctx, push.Registration{Stream: "orders", ID: "billing", Namespace: "webhook",
		URL: "https://billing.example/hooks?token=capability", Config: push.Config(`{"secrets":["whsec_s3cr3t"]}`)})
	require.NoError(t, err)
	batch, err := s.Due(ctx, store.DueQuery{At: t0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.NoError(t, s.Park(ctx, batch.Registrations[0].Claim(), 2, store.Evidence{At: t0, Event: store.EventParked, Status: 410, Error: "410 Gone"}))
	return s
}

// parkAgain parks parkedStore's registration again, once it was unparked.
func parkAgain(t *testing.T, s *memory.Store) {
	t.Helper()
	batch, err := s.Due(t.Context(), store.DueQuery{At: t0.Add(2 * time.Hour), Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(3 * time.Hour)})
	require.NoError(t, err)
	require.Len(t, batch.Registrations, 1)
	require.NoError(t, s.Park(t.Context(), batch.Registrations[0].Claim(), 2, store.Evidence{At: t0.Add(2 * time.Hour), Event: store.EventParked, Status: 410}))
}

func adminCall(t *testing.T, srv *httptest.Server, method, path, token string, q url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path+"?"+q.Encode(), nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, body := send(t, srv, req)
	return resp.StatusCode, body
}

// adminOK makes an admin call that must answer 200, and decodes its JSON.
func adminOK[T any](t *testing.T, srv *httptest.Server, method, path, token string, q url.Values) (T, string) {
	t.Helper()
	code, body := adminCall(t, srv, method, path, token, q)
	require.Equal(t, http.StatusOK, code, body)
	var v T
	require.NoError(t, json.Unmarshal([]byte(body), &v), body)
	return v, body
}

func TestAdminAPI(t *testing.T) {
	s := parkedStore(t)
	srv := adminServer(t, s, testToken, t0.Add(time.Hour))
	key := url.Values{"stream": {"orders"}, "id": {"billing"}}

	code, body := adminCall(t, srv, "GET", "/v1/registrations", "", url.Values{"parked": {"true"}})
	require.Equal(t, http.StatusUnauthorized, code, "a token is required when set")
	require.Contains(t, body, "HERALD_ADMIN_TOKEN")
	code, _ = adminCall(t, srv, "GET", "/v1/registrations", "wrong", nil)
	require.Equal(t, http.StatusUnauthorized, code)

	regs, body := adminOK[[]operator.RegistrationView](t, srv, "GET", "/v1/registrations", testToken, url.Values{"parked": {"true"}})
	require.Len(t, regs, 1)
	require.True(t, regs[0].Parked)
	require.Equal(t, uint64(2), regs[0].NextSeq)
	require.NotContains(t, body, "whsec_s3cr3t", "no config in the API")
	require.NotContains(t, body, "capability", "no capability in a URL's query")

	code, body = adminCall(t, srv, "GET", "/v1/evidence", testToken, key)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"status": 410`)

	code, body = adminCall(t, srv, "POST", "/v1/registration/skip", testToken, url.Values{"stream": {"orders"}, "id": {"billing"}, "to_seq": {"99"}})
	require.Equal(t, http.StatusBadRequest, code, "a seq out of range is bad input")
	require.Contains(t, body, "invalid to_seq: is 99", "the field is the query parameter")
	code, _ = adminCall(t, srv, "POST", "/v1/registration/unpark", testToken, url.Values{"stream": {"orders"}, "id": {"nobody"}})
	require.Equal(t, http.StatusNotFound, code)
	code, _ = adminCall(t, srv, "GET", "/v1/registration/unpark", testToken, key)
	require.Equal(t, http.StatusMethodNotAllowed, code, "changes are POSTs")

	code, body = adminCall(t, srv, "POST", "/v1/registration/skip", testToken, url.Values{"stream": {"orders"}, "id": {"billing"}, "to_seq": {"3"}, "reason": {"poison"}})
	require.Equal(t, http.StatusOK, code, body)
	code, body = adminCall(t, srv, "POST", "/v1/registration/unpark", testToken, key)
	require.Equal(t, http.StatusOK, code, body)
	st, err := s.Get(t.Context(), "orders", "billing")
	require.NoError(t, err)
	require.False(t, st.Parked)
	require.Equal(t, uint64(3), st.NextSeq)
	require.True(t, st.NextAttemptAt.Equal(t0.Add(time.Hour)), "due from the server's clock")

	code, body = adminCall(t, srv, "POST", "/v1/registration/rewind", testToken, url.Values{"stream": {"orders"}, "id": {"billing"}, "to_seq": {"1"}})
	require.Equal(t, http.StatusOK, code, body)
	st, err = s.Get(t.Context(), "orders", "billing")
	require.NoError(t, err)
	require.Equal(t, uint64(1), st.NextSeq)
}

func TestMetrics(t *testing.T) {
	s := parkedStore(t)
	m := newMetrics(func(ctx context.Context) (store.Stats, error) { return s.Stats(ctx, t0) },
		func(ctx context.Context) ([]store.Host, error) { return s.Hosts(ctx, store.HostQuery{}) })
	h := m.hooks("webhook")
	h.Attempt(push.Attempt{Outcome: push.Outcome{Verdict: push.Accepted}})
	h.Attempt(push.Attempt{Outcome: push.Outcome{Verdict: push.Permanent}})
	h.Turn(t0, push.SweepReport{Registrations: 1, Parked: 1}, 12*time.Millisecond, nil)
	h.Claim(t0, 1, nil)
	w, err := push.NewWorker(s, s, push.TransportFunc(func(context.Context, push.Registration, push.Message, time.Time) (push.Outcome, error) {
		return push.Outcome{}, nil
	}), webhook.New())
	require.NoError(t, err)
	m.gauges.workers = append(m.gauges.workers, w)

	text := scrape(t, m)
	for _, want := range []string{
		`herald_deliveries_total{namespace="webhook",outcome="accepted"} 1`,
		`herald_deliveries_total{namespace="webhook",outcome="permanent"} 1`,
		`herald_turns_total{namespace="webhook",result="attention"} 1`,
		`herald_turn_duration_seconds_count{namespace="webhook"} 1`,
		`herald_claims_total{namespace="webhook",result="ok"} 1`,
		`herald_turns_in_flight{namespace="webhook"} 0`,
		`herald_messages_in_flight{namespace="webhook"} 0`,
		`herald_hosts_at_cap{namespace="webhook"} 0`,
		`herald_registrations{namespace="webhook",state="parked"} 1`,
		`herald_parked_registrations{namespace="webhook"} 1`,
		`herald_records_behind{namespace="webhook"} 2`,
		`herald_store_up 1`,
	} {
		require.True(t, strings.Contains(text, want), "/metrics lacks %s", want)
	}
}

func TestAdminAPIMissingParameters(t *testing.T) {
	srv := adminServer(t, parkedStore(t), "", t0)
	for path, want := range map[string]string{
		"/v1/registration/unpark": "stream and id are required",
		"/v1/registration/skip":   "stream, id and to_seq are required",
		"/v1/registration/rewind": "stream, id and to_seq are required",
	} {
		code, body := adminCall(t, srv, "POST", path, "", url.Values{"stream": {"orders"}})
		require.Equal(t, http.StatusBadRequest, code, path)
		require.Contains(t, body, want, path)
	}
	code, body := adminCall(t, srv, "GET", "/v1/evidence", "", nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "stream and id are required")
}

// Every error of the admin API is JSON, unknown paths and methods included;
// a flag that is not true or false (1 neither: the OpenAPI boolean), an
// empty parameter (stream= would list every stream) and a limit past
// store.MaxListLimit are refused, on every route alike.
func TestAdminAPIErrorsAreJSON(t *testing.T) {
	srv := adminServer(t, parkedStore(t), "", t0)
	for _, c := range []struct {
		method, path string
		q            url.Values
		code         int
		want         string
	}{
		{http.MethodGet, "/v1/nope", nil, http.StatusNotFound, "no such endpoint at this address: /v1/nope (README, \"The command and the operator's guide\", lists the admin address's routes"},
		{http.MethodGet, "/v1/registration", url.Values{"stream": {"orders"}, "id": {"billing"}}, http.StatusNotFound, "/v1/registration is served on the API address (herald run --api-addr), not on this one"}, // the HTTP API's
		{http.MethodGet, "/v1/hosts", url.Values{"bogus": {"1"}}, http.StatusBadRequest, "invalid bogus: is not a parameter of /v1/hosts"},
		{http.MethodGet, "/v1/registrations", url.Values{"stream": {"a\x1b[31m"}}, http.StatusBadRequest, "invalid stream: has a control character U+001B"},
		{http.MethodGet, "/v1/registrations", url.Values{"after_stream": {"orders"}}, http.StatusBadRequest, "invalid after_id: is missing: a list after a registration takes its stream and its id"},
		{http.MethodGet, "/v1/registrations", url.Values{"namespace": {"Web Hook"}}, http.StatusBadRequest, "invalid namespace"},
		{http.MethodGet, "/", nil, http.StatusNotFound, "no such endpoint"},
		{http.MethodPost, "/v1/registrations", nil, http.StatusMethodNotAllowed, "use GET"},
		{http.MethodGet, "/v1/registration/unpark", nil, http.StatusMethodNotAllowed, "use POST"},
		{http.MethodGet, "/v1/registrations", url.Values{"parked": {"yes"}}, http.StatusBadRequest, `parked: "yes" must be true or false`},
		{http.MethodGet, "/v1/registrations", url.Values{"lagging": {"1x"}}, http.StatusBadRequest, "lagging"},
		{http.MethodGet, "/v1/evidence", url.Values{"stream": {"orders"}, "id": {"billing"}, "limit": {"ten"}}, http.StatusBadRequest, "limit"},
		{http.MethodGet, "/v1/registrations", url.Values{"limit": {"0"}}, http.StatusBadRequest, "invalid limit: is 0: it must be from 1 to 10000 (leave it out for the default)"},
		{http.MethodGet, "/v1/evidence", url.Values{"stream": {"orders"}, "id": {"billing"}, "limit": {"100000000"}}, http.StatusBadRequest,
			"invalid limit: is 100000000: it must be from 1 to 10000"},
		{http.MethodGet, "/v1/registrations", url.Values{"lagging": {"1"}}, http.StatusBadRequest, `invalid lagging: "1" must be true or false`},
		{http.MethodGet, "/v1/registrations", url.Values{"parked": {"1"}}, http.StatusBadRequest, `invalid parked: "1" must be true or false`},
		{http.MethodGet, "/v1/registrations", url.Values{"stream": {""}}, http.StatusBadRequest, "invalid stream: is empty: give it a value or leave it out"},
		{http.MethodGet, "/v1/evidence", url.Values{"stream": {"orders"}, "id": {"billing"}, "limit": {""}}, http.StatusBadRequest, "invalid limit: is empty"},
		// A filter the list would otherwise drop, and so list more than asked.
		{http.MethodGet, "/v1/registrations", url.Values{"id": {"billing"}}, http.StatusBadRequest, "invalid id: is not a parameter of /v1/registrations"},
		{http.MethodGet, "/v1/registrations", url.Values{"stream": {"orders", "invoices"}}, http.StatusBadRequest, "invalid stream: is given 2 times"},
		{http.MethodGet, "/v1/hosts", url.Values{"limit": {"-5"}}, http.StatusBadRequest, "invalid limit: is -5: it must be from 1 to 10000"},
	} {
		code, body := adminCall(t, srv, c.method, c.path, "", c.q)
		require.Equal(t, c.code, code, "%s %s: %s", c.method, c.path, body)
		var e map[string]string
		require.NoError(t, json.Unmarshal([]byte(body), &e), "%s %s answered %q", c.method, c.path, body)
		require.Contains(t, e["error"], c.want)
	}
	// parked=false is read, not ignored.
	code, body := adminCall(t, srv, http.MethodGet, "/v1/registrations", "", url.Values{"parked": {"false"}})
	require.Equal(t, http.StatusOK, code, body)
	code, body = adminCall(t, srv, http.MethodGet, "/v1/registrations", "", url.Values{"parked": {"true"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"billing"`)
	// A namespace is free text: one no registration has lists none.
	code, body = adminCall(t, srv, http.MethodGet, "/v1/registrations", "", url.Values{"namespace": {"zzz"}})
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `[]`, body)
}

// TestAdminAddressServesThePage: the admin address serves the operator's
// page under /ui/ (its own login for the same token) and GET / sends there,
// while the JSON API keeps its bearer rule.
func TestAdminAddressServesThePage(t *testing.T) {
	s := parkedStore(t)
	now := func() time.Time { return t0.Add(time.Hour) }
	pg, err := page.New(page.Options{Store: s, Token: testToken, Now: now})
	require.NoError(t, err)
	srv := httptest.NewServer(withPage(adminHandler(s, adminGate(s, testToken, now()), now, func(string) {}), pg))
	defer srv.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]string{"/": "/ui/", "/ui/": "/ui/login"} {
		resp, err := c.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.Header.Get("Location"), path)
	}
	resp, err := c.Get(srv.URL + "/ui/login")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `name="token"`)
	code, _ := adminCall(t, srv, "GET", "/v1/registrations", "", nil)
	require.Equal(t, http.StatusUnauthorized, code, "the API still needs the bearer token")
	code, _ = adminCall(t, srv, "GET", "/v1/registrations", testToken, nil)
	require.Equal(t, http.StatusOK, code)
}

// Unparking answers, on both APIs, whether the registration was parked, as
// herald unpark does: was_parked true the first time; false after, when
// nothing changed (no evidence, the same due time).
func TestUnparkSaysWhetherItWasParked(t *testing.T) {
	s := parkedStore(t)
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()},
		Now: func() time.Time { return t0.Add(time.Hour) }})
	require.NoError(t, err)
	for _, c := range []struct {
		handler http.Handler
		path    string
	}{
		{d.APIHandler(), "/v1/registration/unpark"},
		{d.AdminHandler(), "/v1/registration/unpark"},
	} {
		srv := httptest.NewServer(c.handler)
		key := url.Values{"stream": {"orders"}, "id": {"billing"}}
		first, body := adminOK[operator.UnparkView](t, srv, "POST", c.path, "", key)
		require.True(t, first.WasParked, "%s: %s", c.path, body)
		require.False(t, first.Parked, c.path)
		evs, err := s.Evidence(t.Context(), "orders", "billing", store.MaxEvidence)
		require.NoError(t, err)

		again, body := adminOK[operator.UnparkView](t, srv, "POST", c.path, "", key)
		require.False(t, again.WasParked, "%s: it was not parked; nothing changed: %s", c.path, body)
		require.Equal(t, first.RegistrationView, again.RegistrationView, c.path)
		after, err := s.Evidence(t.Context(), "orders", "billing", store.MaxEvidence)
		require.NoError(t, err)
		require.Equal(t, evs, after, "%s: no evidence for an unpark that changed nothing", c.path)
		srv.Close()

		parkAgain(t, s) // for the next API
	}
}

// The admin API names an action on one registration as the HTTP API does,
// POST /v1/registration/<action>; the names /v1/unpark, /v1/skip and
// /v1/rewind are not served.
func TestAdminActionsAreUnderRegistration(t *testing.T) {
	s := parkedStore(t)
	srv := adminServer(t, s, "", t0.Add(time.Hour))
	for _, c := range []struct {
		action string
		q      url.Values
	}{
		{"skip", url.Values{"to_seq": {"3"}, "reason": {"poison"}}},
		{"unpark", nil},
		{"rewind", url.Values{"to_seq": {"1"}}},
	} {
		q := url.Values{"stream": {"orders"}, "id": {"billing"}}
		for k, v := range c.q {
			q[k] = v
		}
		code, body := adminCall(t, srv, http.MethodPost, "/v1/"+c.action, "", q)
		require.Equal(t, http.StatusNotFound, code, "/v1/%s: %s", c.action, body)
		code, body = adminCall(t, srv, http.MethodPost, "/v1/registration/"+c.action, "", q)
		require.Equal(t, http.StatusOK, code, "/v1/registration/%s: %s", c.action, body)
	}
	st, err := s.Get(t.Context(), "orders", "billing")
	require.NoError(t, err)
	require.False(t, st.Parked)
	require.Equal(t, uint64(1), st.NextSeq)
}

// Run serves on the listeners given instead of listening itself.
func TestRunServesOnTheListenersGiven(t *testing.T) {
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ls := Listeners{Metrics: metrics}
	ready := make(chan Addrs, 1)
	d, err := New(Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		MetricsAddr: "127.0.0.1:0", Listeners: ls, Ready: func(a Addrs) { ready <- a }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	a := <-ready
	require.Equal(t, ls.Metrics.Addr().String(), a.Metrics, "Run serves on the listener given")
	resp, err := http.Get("http://" + a.Metrics + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	require.NoError(t, <-done)
}

// POST /v1/registrations/unpark, on both APIs and every store, unparks
// every parked registration it matches, each with its evidence, and leaves
// the rest: those of another namespace or stream, and those not parked.
func TestUnparkAllUnparksThoseItMatches(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Backend{
		"memory":   func(t *testing.T) store.Backend { return memory.New() },
		"sqlite":   func(t *testing.T) store.Backend { return seedtest.SQLite(t) },
		"postgres": func(t *testing.T) store.Backend { return pgtest.NewStore(t) },
	} {
		t.Run(name, func(t *testing.T) {
			for _, api := range []string{"admin", "api"} {
				t.Run(api, func(t *testing.T) { unparkAllUnparksThoseItMatches(t, open(t), api) })
			}
		})
	}
}

func unparkAllUnparksThoseItMatches(t *testing.T, s store.Backend, api string) {
	ctx := t.Context()
	regs := []struct {
		stream, id, ns string
		park           bool
	}{
		{"orders", "a", "webhook", true},
		{"orders", "b", "webhook", true},
		{"orders", "c", "webhook", false},
		{"orders", "d", "cloudevents", true},
		{"invoices", "e", "webhook", true},
	}
	for _, r := range regs {
		_, err := s.Append(ctx, r.stream, journal.Entry{ID: r.stream + "-" + r.id, Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	if sq, ok := s.(interface {
		Sequence(ctx context.Context) (int, error)
	}); ok {
		_, err := sq.Sequence(ctx)
		require.NoError(t, err)
	}
	for _, r := range regs {
		_, err := s.Register(ctx, push.Registration{Stream: r.stream, ID: r.id, Namespace: r.ns, URL: "https://" + r.id + ".example/"})
		require.NoError(t, err)
	}
	park := map[string]bool{}
	for _, r := range regs {
		park[r.stream+" "+r.id] = r.park
	}
	for _, ns := range []string{"webhook", "cloudevents"} {
		b, err := s.Due(ctx, store.DueQuery{At: t0, Limit: len(regs), Namespace: ns, Owner: "w", LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
		for _, c := range b.Registrations {
			if park[c.Stream+" "+c.ID] {
				require.NoError(t, s.Park(ctx, c.Claim(), 1, store.Evidence{At: t0, Event: store.EventParked, Seq: 1, Status: 410, Error: "410 Gone"}))
			} else {
				require.NoError(t, s.Retry(ctx, c.Claim(), 1, t0.Add(time.Hour), store.Evidence{At: t0, Event: store.EventFailed, Seq: 1, Error: "later"}))
			}
		}
	}
	at := t0.Add(2 * time.Hour)
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()}, Now: func() time.Time { return at }})
	require.NoError(t, err)
	h := d.AdminHandler()
	if api == "api" {
		h = d.APIHandler()
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// Bad input changes nothing: an id (meant for /v1/registration/unpark,
	// it would otherwise widen to every parked registration of the
	// stream), a namespace or stream no registration can have.
	for _, q := range []url.Values{
		{"stream": {"orders"}, "id": {"a"}},
		{"namespace": {"Web Hook"}},
		{"stream": {"orders\n1"}},
		{"stream": {""}},                   // an unset variable: not "every stream"
		{"stream": {"orders", "invoices"}}, // twice: not the first only
		{"namespace": {"webhook", "webhook"}},
	} {
		code, body := adminCall(t, srv, "POST", "/v1/registrations/unpark", "", q)
		require.Equal(t, http.StatusBadRequest, code, "%v: %s", q, body)
		require.Contains(t, body, "nothing", "%v", q)
	}
	// A query that does not parse: url.Values would drop the bad pair and
	// widen the filter. A filter sent as a form body: unread, it would
	// leave no filter.
	for _, c := range []struct{ query, form string }{
		{"stream=nope%zz", ""}, {"stream=nope;x", ""}, {"namespace=nope;stream=x", ""}, {"", "stream=orders"},
	} {
		var form io.Reader
		if c.form != "" {
			form = strings.NewReader(c.form)
		}
		req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/registrations/unpark?"+c.query, form)
		require.NoError(t, err)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, body := send(t, srv, req)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%+v: %s", c, body)
		require.Contains(t, body, "nothing was unparked", "%+v", c)
	}
	for _, r := range regs {
		st, err := s.Get(ctx, r.stream, r.id)
		require.NoError(t, err)
		require.Equal(t, r.park, st.Parked, "bad input unparked %s %s", r.stream, r.id)
	}

	got, body := adminOK[operator.UnparkedAll](t, srv, "POST", "/v1/registrations/unpark", "", url.Values{"stream": {"orders"}, "namespace": {"webhook"}})
	var names []string
	for _, v := range got.Unparked {
		names = append(names, v.Stream+" "+v.ID)
		require.False(t, v.Parked, body)
		require.Equal(t, uint64(1), v.NextSeq, "its cursor is where it was parked")
	}
	require.Equal(t, []string{"orders a", "orders b"}, names)
	for _, r := range regs {
		st, err := s.Get(ctx, r.stream, r.id)
		require.NoError(t, err)
		unparked := r.stream == "orders" && r.ns == "webhook" && r.park
		require.Equal(t, r.park && !unparked, st.Parked, "%s %s", r.stream, r.id)
		evs, err := s.Evidence(ctx, r.stream, r.id, 1)
		require.NoError(t, err)
		if unparked {
			require.Equal(t, store.EventUnparked, evs[0].Event, "%s %s", r.stream, r.id)
			require.Equal(t, at, evs[0].At.UTC())
			require.False(t, st.NextAttemptAt.After(at), "due at once")
		} else if len(evs) > 0 {
			require.NotEqual(t, store.EventUnparked, evs[0].Event, "%s %s", r.stream, r.id)
		}
	}

	// Again: nothing is parked there now; an empty list, nothing changed.
	code, body := adminCall(t, srv, "POST", "/v1/registrations/unpark", "", url.Values{"stream": {"orders"}, "namespace": {"webhook"}})
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"unparked": []}`, body)

	// No filter: the rest.
	got, _ = adminOK[operator.UnparkedAll](t, srv, "POST", "/v1/registrations/unpark", "", nil)
	names = nil
	for _, v := range got.Unparked {
		names = append(names, v.Stream+" "+v.ID)
	}
	require.Equal(t, []string{"invoices e", "orders d"}, names)
}

// Open without a token, both APIs still refuse what a web page in the
// operator's browser could send them: a POST from another origin (as a
// browser marks it: Sec-Fetch-Site, or an Origin that is not the Host) and
// any request to a name that is not loopback (DNS rebinding). Each is a 403
// and changes nothing; a program's request (no such headers) is served.
func TestOpenAPIsRefuseOtherOriginsAndNames(t *testing.T) {
	s := parkedStore(t)
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()},
		Now: func() time.Time { return t0.Add(time.Hour) }})
	require.NoError(t, err)
	for name, h := range map[string]http.Handler{"admin": d.AdminHandler(), "api": d.APIHandler()} {
		srv := httptest.NewServer(h)
		for _, c := range []struct {
			why     string
			method  string
			path    string
			headers map[string]string
			code    int
		}{
			{"cross-site fetch", "POST", "/v1/registrations/unpark", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
			{"another origin", "POST", "/v1/registration/unpark?stream=orders&id=billing", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
			{"rebound name", "POST", "/v1/registrations/unpark", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
			{"rebound name, a read", "GET", "/v1/registrations", map[string]string{"Host": "evil.example:9465"}, http.StatusForbidden},
			{"a read from another origin", "GET", "/v1/registrations", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusOK},
			{"localhost", "GET", "/v1/registrations", map[string]string{"Host": "localhost:9465"}, http.StatusOK},
			{"::1", "GET", "/v1/registrations", map[string]string{"Host": "[::1]:9465"}, http.StatusOK},
			{"another loopback address", "GET", "/v1/registrations", map[string]string{"Host": "127.0.0.5"}, http.StatusOK},
		} {
			req, err := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, nil)
			require.NoError(t, err)
			for k, v := range c.headers {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, body := send(t, srv, req)
			require.Equal(t, c.code, resp.StatusCode, "%s, %s: %s", name, c.why, body)
			if c.code == http.StatusForbidden {
				require.Contains(t, body, `"error"`)
			}
			st, err := s.Get(t.Context(), "orders", "billing")
			require.NoError(t, err)
			require.True(t, st.Parked, "%s, %s: nothing changed", name, c.why)
		}
		code, body := adminCall(t, srv, "POST", "/v1/registration/unpark", "", url.Values{"stream": {"orders"}, "id": {"billing"}})
		require.Equal(t, http.StatusOK, code, "%s: a program's POST is served: %s", name, body)
		srv.Close()
		parkAgain(t, s) // for the next API
	}
}

// A running daemon delivers what an unpark through either API made due at
// once: the unpark wakes the registration's worker. The daemon claims by
// itself only every hour here, and a canary registration's delivery says
// its first claim is done (it found the other parked), so a delivery of
// the unparked registration within the test's network timeout is the
// wake's.
func TestUnparkThroughEitherAPIWakesTheWorker(t *testing.T) {
	for _, c := range []struct{ api, path string }{
		{"admin", "/v1/registration/unpark?stream=orders&id=billing"},
		{"admin", "/v1/registrations/unpark?stream=orders"},
		{"api", "/v1/registration/unpark?stream=orders&id=billing"},
		{"api", "/v1/registrations/unpark?namespace=webhook"},
	} {
		t.Run(c.api+strings.SplitN(c.path, "?", 2)[0], func(t *testing.T) {
			got := make(chan string, 8)
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Get("webhook-id")
				w.WriteHeader(http.StatusNoContent)
			}))
			defer recv.Close()
			s := seedtest.SQLite(t)
			ctx := t.Context()
			_, err := s.Append(ctx, "orders", journal.Entry{ID: "o-1", Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)})
			require.NoError(t, err)
			_, err = s.Register(ctx, push.Registration{Stream: "orders", ID: "billing", Namespace: "webhook", URL: recv.URL + "/hook",
				Config: push.Config(`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`)})
			require.NoError(t, err)
			now := time.Now()
			b, err := s.Due(ctx, store.DueQuery{At: now, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: now.Add(time.Second)})
			require.NoError(t, err)
			require.Len(t, b.Registrations, 1)
			require.NoError(t, s.Park(ctx, b.Registrations[0].Claim(), 1, store.Evidence{At: now, Event: store.EventParked, Seq: 1, Status: 410}))
			_, err = s.Append(ctx, "canary", journal.Entry{ID: "canary-1", Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)})
			require.NoError(t, err)
			_, err = s.Register(ctx, push.Registration{Stream: "canary", ID: "c", Namespace: "webhook", URL: recv.URL + "/canary",
				Config: push.Config(`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`)})
			require.NoError(t, err)

			tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second})
			require.NoError(t, err)
			d := start(t, Options{Store: s, Transport: tr, Projections: []push.Projection{webhook.New()},
				AdminAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", Every: time.Hour})
			addrs := d.Addrs
			select {
			case id := <-got:
				require.Equal(t, "canary-1", id, "the first claim served the canary, not the parked registration")
			case <-d.stopped:
				t.Fatalf("the daemon stopped: %v", *d.runErr)
			case <-time.After(30 * time.Second): // a network timeout, not synchronisation
				t.Fatal("the canary was not delivered within 30 s")
			}
			addr := addrs.Admin
			if c.api == "api" {
				addr = addrs.API
			}
			req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+c.path, nil)
			require.NoError(t, err)
			resp, body := sendWith(t, http.DefaultClient, req)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			select {
			case id := <-got:
				require.Equal(t, "o-1", id)
			case <-d.stopped:
				t.Fatalf("the daemon stopped: %v", *d.runErr)
			case <-time.After(30 * time.Second): // a network timeout, not synchronisation
				t.Fatal("no delivery within 30 s of the unpark: the worker was not woken")
			}
		})
	}
}

// failingUnpark is a store whose Unpark fails after its first n calls.
type failingUnpark struct {
	*memory.Store
	n int
}

func (f *failingUnpark) Unpark(ctx context.Context, stream, id string, at time.Time) error {
	if f.n == 0 {
		return errors.New("injected: the database went away")
	}
	f.n--
	return f.Store.Unpark(ctx, stream, id, at)
}

// A bulk unpark that fails part way answers 500 with those it unparked
// before the failure, which stay unparked.
func TestUnparkAllFailingPartWayListsThoseUnparked(t *testing.T) {
	s := memory.New()
	for _, id := range []string{"a", "b", "c"} {
		_, err := s.Append(t.Context(), "orders", journal.Entry{ID: "o-" + id, Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)})
		require.NoError(t, err)
		_, err = s.Register(t.Context(), push.Registration{Stream: "orders", ID: id, Namespace: "webhook", URL: "https://" + id + ".example/"})
		require.NoError(t, err)
	}
	b, err := s.Due(t.Context(), store.DueQuery{At: t0, Limit: 3, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, b.Registrations, 3)
	for _, st := range b.Registrations {
		require.NoError(t, s.Park(t.Context(), st.Claim(), 1, store.Evidence{At: t0, Event: store.EventParked, Seq: 1, Status: 410}))
	}
	srv := adminServer(t, &failingUnpark{Store: s, n: 2}, "", t0.Add(time.Hour))
	code, body := adminCall(t, srv, "POST", "/v1/registrations/unpark", "", url.Values{"stream": {"orders"}})
	require.Equal(t, http.StatusInternalServerError, code, body)
	var got struct {
		Error    string                      `json:"error"`
		Unparked []operator.RegistrationView `json:"unparked"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Contains(t, got.Error, "unparked 2 of 3, then stream=orders id=c: injected")
	var ids []string
	for _, v := range got.Unparked {
		ids = append(ids, v.ID)
		st, err := s.Get(t.Context(), "orders", v.ID)
		require.NoError(t, err)
		require.False(t, st.Parked, v.ID)
	}
	require.Equal(t, []string{"a", "b"}, ids)
	st, err := s.Get(t.Context(), "orders", "c")
	require.NoError(t, err)
	require.True(t, st.Parked, "the one it failed on stays parked")
}

// With a token the guard leaves names and origins alone: the token is the
// authority, and a browser cannot send it from another origin by itself.
func TestAPIsWithATokenTakeAnyNameAndOrigin(t *testing.T) {
	s := parkedStore(t)
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()},
		AdminToken: testToken, APIToken: testToken, Now: func() time.Time { return t0.Add(time.Hour) }})
	require.NoError(t, err)
	for name, h := range map[string]http.Handler{"admin": d.AdminHandler(), "api": d.APIHandler()} {
		srv := httptest.NewServer(h)
		req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/registration/unpark?stream=orders&id=billing", nil)
		require.NoError(t, err)
		req.Host = "herald.internal.example:9465"
		req.Header.Set("Origin", "https://ops.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, body := send(t, srv, req)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", name, body)
		srv.Close()
		parkAgain(t, s)
	}
}

// The routes of one registration, on both APIs, read a strict query: a
// repeated or unknown parameter, a body, or a stream or id that no
// registration can have is a 400 naming it, and changes nothing.
func TestOneRegistrationRoutesRefuseWhatNamesNoRegistration(t *testing.T) {
	s := parkedStore(t)
	admin := adminServer(t, s, "", t0.Add(time.Hour))
	api := apiServer(t, s, "")
	before, err := s.Get(t.Context(), "orders", "billing")
	require.NoError(t, err)
	parked := func() bool {
		st, err := s.Get(t.Context(), "orders", "billing")
		require.NoError(t, err)
		require.Equal(t, before.NextSeq, st.NextSeq, "the cursor moved")
		return st.Parked
	}
	key := "stream=orders&id=billing"
	for _, c := range []struct {
		srv          *httptest.Server
		method, path string
		query, body  string
		want         string
	}{
		{admin, http.MethodPost, "/v1/registration/unpark", key + "&id=other", "", "invalid id: is given 2 times"},
		{api, http.MethodPost, "/v1/registration/unpark", key + "&stream=invoices", "", "invalid stream: is given 2 times"},
		{admin, http.MethodPost, "/v1/registration/unpark", key + "&namespace=webhook", "", "invalid namespace: is not a parameter of /v1/registration/unpark, which takes stream, id"},
		{admin, http.MethodPost, "/v1/registration/skip", key + "&to_sq=3", "", "invalid to_sq: is not a parameter"},
		{admin, http.MethodPost, "/v1/registration/rewind", key + "&to_seq=1&reason=x", "", "invalid reason: is not a parameter"},
		{admin, http.MethodPost, "/v1/registration/unpark", key, "stream=invoices", "invalid body: is not read"},
		{api, http.MethodPost, "/v1/registration/unpark", key, "{}", "invalid body: is not read"},
		{api, http.MethodDelete, "/v1/registration", key, `{"id":"other"}`, "invalid body: is not read"},
		{admin, http.MethodPost, "/v1/registration/skip", key + "&to_seq=3&to_seq=4", "", "invalid to_seq: is given 2 times"},
		{admin, http.MethodPost, "/v1/hosts/reset", "host=billing.example:443&host=other.example:443", "", "invalid host: is given 2 times"},
		{api, http.MethodPost, "/v1/registration/unpark", "stream=%3Bx%1B&id=billing", "", "invalid stream"},
		{admin, http.MethodGet, "/v1/evidence", "stream=orders&id=bill%00ing", "", "invalid id"},
		{api, http.MethodGet, "/v1/registration", "stream=or+ders&id=billing", "", "invalid stream"},
		{api, http.MethodDelete, "/v1/registration", key + "&idd=x", "", "invalid idd: is not a parameter"},
		{api, http.MethodDelete, "/v1/registration", key + "&zz=1&aa=1", "", "invalid aa: is not a parameter"}, // the first by name, each time
		{api, http.MethodGet, "/v1/registration", "stream=orders&id=billing&x=%zz", "", "invalid query: does not parse"},
	} {
		code, body := call(t, c.srv, c.method, c.path+"?"+c.query, "", "", c.body)
		require.Equal(t, http.StatusBadRequest, code, "%s %s?%s: %s", c.method, c.path, c.query, body)
		require.Contains(t, errorOf(t, body), c.want, "%s %s?%s", c.method, c.path, c.query)
		require.True(t, parked(), "%s %s?%s changed the registration", c.method, c.path, c.query)
	}
	// Named once and well, each still does its work.
	code, body := adminCall(t, admin, http.MethodGet, "/v1/evidence", "", url.Values{"stream": {"orders"}, "id": {"billing"}, "limit": {"5"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "410 Gone")
	code, body = call(t, api, http.MethodPost, "/v1/registration/unpark?"+key, "", "", "")
	require.Equal(t, http.StatusOK, code, body)
	require.False(t, parked())
	code, body = adminCall(t, admin, http.MethodPost, "/v1/registration/skip", "", url.Values{"stream": {"orders"}, "id": {"billing"}, "to_seq": {"3"}, "reason": {"a test"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"next_seq": 3`)
}

// TestRunServesThePageOnTheAdminAddress: a running daemon serves the
// operator's page under /ui/ of its admin address, GET / sends there, and
// the admin API answers beside it.
func TestRunServesThePageOnTheAdminAddress(t *testing.T) {
	s := seedtest.SQLite(t)
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

// hostile is a receiver's text as a host-level failure may carry it.
const hostile = seedtest.Hostile

// downHostStore: down.example:443 down with two registrations held (seedtest).
func downHostStore(t *testing.T) *sqlite.Store {
	s, err := sqlite.Open(t.Context(), seedtest.DownHostDB(t, t0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// scrape is what m serves on /metrics.
func scrape(t *testing.T, m *metrics) string {
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

func TestAdminAPIHosts(t *testing.T) {
	srv := adminServer(t, downHostStore(t), testToken, t0.Add(time.Hour))

	code, body := adminCall(t, srv, "GET", "/v1/hosts", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	hosts, _ := adminOK[[]store.Host](t, srv, "GET", "/v1/hosts", testToken, url.Values{"state": {"down"}})
	require.Len(t, hosts, 1)
	require.Equal(t, 2, hosts[0].Held)
	code, body = adminCall(t, srv, "GET", "/v1/registrations", testToken, url.Values{"stream": {"orders"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 2, strings.Count(body, `"held_for": "down"`), body)

	// Resumed, a held registration says it waits for the host's probe.
	adminOK[operator.PauseView](t, srv, "POST", "/v1/registration/pause", testToken, url.Values{"stream": {"orders"}, "id": {"a"}})
	resumed, _ := adminOK[operator.PauseView](t, srv, "POST", "/v1/registration/resume", testToken, url.Values{"stream": {"orders"}, "id": {"a"}})
	require.True(t, resumed.Changed)
	require.Equal(t, operator.StateHeld, resumed.State)
	require.Equal(t, store.HostDown, resumed.HeldFor)
	require.Equal(t, hosts[0].NextProbeAt, resumed.HostNextProbeAt)
	code, body = adminCall(t, srv, "GET", "/v1/hosts", testToken, url.Values{"state": {"sideways"}})
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = adminCall(t, srv, "POST", "/v1/hosts/reset", testToken, nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = adminCall(t, srv, "POST", "/v1/hosts/reset", testToken, url.Values{"host": {"nowhere.example:443"}})
	require.Equal(t, http.StatusNotFound, code, body)
	h, _ := adminOK[store.Host](t, srv, "POST", "/v1/hosts/reset", testToken, url.Values{"host": {"down.example:443"}})
	require.Equal(t, store.HostUp, h.State)
	require.True(t, h.Since.Equal(t0.Add(time.Hour)), "reset at the admin's clock")
}

func TestHostMetrics(t *testing.T) {
	s := downHostStore(t)
	m := newMetrics(func(ctx context.Context) (store.Stats, error) { return s.Stats(ctx, t0) },
		func(ctx context.Context) ([]store.Host, error) { return store.AllHosts(ctx, s, store.HostQuery{}) })
	m.hooks("webhook").HostFailure(store.Host{Host: "down.example:443", State: store.HostDown})
	body := scrape(t, m)
	for _, want := range []string{
		`herald_hosts{state="down"} 1`,
		`herald_hosts{state="unavailable"} 0`,
		`herald_held_registrations 2`,
		`herald_host_failures_total 1`,
		`herald_host_failures{host="down.example:443"} 3`,
	} {
		require.Contains(t, body, want)
	}

	// Per-host series are the hosts not up: none once the host is up.
	_, err := s.ResetHost(t.Context(), "down.example:443", t0.Add(time.Hour))
	require.NoError(t, err)
	body = scrape(t, m)
	require.Contains(t, body, `herald_hosts{state="up"} 1`)
	require.NotContains(t, body, `herald_host_failures{`)
}

// Per-host state is bounded: 200 hosts that refuse connections leave at
// most maxHostSeries per-host series, each of a host not up, and none once
// retention removed their rows (their registrations gone).
func TestHostMetricSeriesAreBounded(t *testing.T) {
	ctx := t.Context()
	s := seedtest.SQLite(t)
	m := newMetrics(func(ctx context.Context) (store.Stats, error) { return s.Stats(ctx, t0) },
		func(ctx context.Context) ([]store.Host, error) { return store.AllHosts(ctx, s, store.HostQuery{}) })
	_, err := s.Append(ctx, "s", journal.Entry{ID: "e", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	const n = 200
	for i := range n {
		_, err := s.Register(ctx, push.Registration{Stream: "s", ID: fmt.Sprint(i), Namespace: "webhook", URL: fmt.Sprintf("https://127.0.0.1:%d/", 20000+i)})
		require.NoError(t, err)
	}
	hooks := m.hooks("webhook")
	for k := range store.HostDownAfter { // every host down: three refusals each
		batch, err := s.Due(ctx, store.DueQuery{At: t0.Add(time.Duration(k) * time.Hour), Limit: n, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Duration(k)*time.Hour + time.Minute)})
		require.NoError(t, err)
		require.Len(t, batch.Registrations, n)
		for _, st := range batch.Registrations {
			h, err := s.HostFailed(ctx, store.HostFailure{Claim: st.Claim(), NextSeq: 1, Host: st.Host(), Horizon: store.DefaultHostHorizon,
				Evidence: store.Evidence{At: t0.Add(time.Duration(k) * time.Hour), Seq: 1, Error: "connect: connection refused"}})
			require.NoError(t, err)
			hooks.HostFailure(h)
		}
	}
	body := scrape(t, m)
	require.Equal(t, n, strings.Count(body, "\nherald_host_failures{"), "one series a host not up")
	require.Contains(t, body, fmt.Sprintf("herald_host_failures_total %d", n*store.HostDownAfter))
	require.Contains(t, body, fmt.Sprintf(`herald_hosts{state="down"} %d`, n))

	for i := range n {
		require.NoError(t, s.Unregister(ctx, "s", fmt.Sprint(i)))
	}
	rep, err := s.Prune(ctx, store.PruneQuery{At: t0.Add(3 * time.Hour), Retain: time.Hour})
	require.NoError(t, err)
	require.Equal(t, n, rep.Hosts, "every host row, with no registration and no failure for the retention age, is gone")
	body = scrape(t, m)
	require.NotContains(t, body, "herald_host_failures{")
	require.Contains(t, body, `herald_hosts{state="down"} 0`)
}
