package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// A tenant scoped to tenant/42/ and, on its stream, three registrations:
// its own, one of an admin's subscription of tenant/ (beyond its scope),
// one of a subscription of tenant/42/ (within it).
const (
	scopedStream = "tenant/42/orders"
	ownReg       = "billing"
	auditReg     = "audit"
	withinReg    = "mine"
)

// subscribedTenant serves a daemon on SQLite where scopedStream holds three
// records and the three registrations, each parked at #2 (#1 acknowledged);
// the subscriptions are made by the admin token over the HTTP API.
func subscribedTenant(t *testing.T) (s *sqlite.Store, admin, api *httptest.Server) {
	t.Helper()
	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "herald.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	for i := 1; i <= 3; i++ {
		_, err := s.Append(ctx, scopedStream, journal.Entry{ID: fmt.Sprintf("r%d", i), Kind: "k", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	_, err = s.Register(ctx, push.Registration{Stream: scopedStream, ID: ownReg, Namespace: "webhook", URL: "https://billing.example/hooks",
		Config: []byte(`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`)})
	require.NoError(t, err)
	admin, api = tenantServers(t, s)
	for prefix, id := range map[string]string{"tenant/": auditReg, "tenant/42/": withinReg} {
		code, body := call(t, api, http.MethodPost, "/v1/subscriptions", "application/json", testToken,
			fmt.Sprintf(`{"stream_prefix": %q, "id": %q, "namespace": "webhook", "url": "https://%s.example/hook"}`, prefix, id, id))
		require.Equal(t, http.StatusOK, code, body)
	}
	batch, err := s.Due(ctx, store.DueQuery{At: t0, Limit: 3, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, batch.Registrations, 3)
	for _, r := range batch.Registrations {
		require.NoError(t, s.Park(ctx, r.Claim(), 2, store.Evidence{At: t0, Event: store.EventParked, Status: 410}))
	}
	return s, admin, api
}

// regState is registration id of scopedStream with its evidence, as JSON.
func regState(t *testing.T, s store.Backend, id string) string {
	t.Helper()
	st, err := s.Get(t.Context(), scopedStream, id)
	require.NoError(t, err)
	evs, err := s.Evidence(t.Context(), scopedStream, id, 0)
	require.NoError(t, err)
	b, err := json.Marshal([]any{st, evs})
	require.NoError(t, err)
	return string(b)
}

// TestTenantCannotChangeAnAdminSubscriptionsRegistration: a token scoped to
// tenant/42/ is refused (403, naming the subscription's prefix) every write
// to the registration an admin's subscription of tenant/ made on its
// stream, which is left as it was, so that the tenant cannot hide its
// records from that receiver; the same token does each to its own
// registration, and to one a subscription within its scope made (but
// update and rotate-secret, refused to every token on a subscription's).
func TestTenantCannotChangeAnAdminSubscriptionsRegistration(t *testing.T) {
	cases := []struct {
		name, method, path string
		admin              bool                       // served by the admin address
		query              func(id string) url.Values // beside stream and id
		body               func(id string) string
		ok, within         int
		paused             bool // the registrations are paused first
	}{
		{name: "unregister", method: "DELETE", path: "/v1/registration", ok: 204, within: 204},
		{name: "unpark", method: "POST", path: "/v1/registration/unpark", ok: 200, within: 200},
		{name: "pause", method: "POST", path: "/v1/registration/pause", ok: 200, within: 200},
		{name: "resume", method: "POST", path: "/v1/registration/resume", ok: 200, within: 200, paused: true},
		{name: "resend", method: "POST", path: "/v1/registration/resend", query: func(string) url.Values { return url.Values{"seq": {"1"}} }, ok: 202, within: 202},
		{name: "skip", method: "POST", path: "/v1/registration/skip", admin: true, query: func(string) url.Values { return url.Values{"to_seq": {"3"}} }, ok: 200, within: 200},
		{name: "rewind", method: "POST", path: "/v1/registration/rewind", admin: true, query: func(string) url.Values { return url.Values{"to_seq": {"1"}} }, ok: 200, within: 200},
		{name: "rotate-secret", method: "POST", path: "/v1/registration/rotate-secret", ok: 200, within: 400},
		{name: "update", method: "POST", path: "/v1/registrations", body: func(id string) string {
			return fmt.Sprintf(`{"stream": %q, "id": %q, "namespace": "webhook", "url": "https://elsewhere.example/hook"}`, scopedStream, id)
		}, ok: 200, within: 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, admin, api := subscribedTenant(t)
			tok := tokenIn(t, s, store.RoleOperator, "tenant/42/")
			if c.paused {
				for _, id := range []string{ownReg, auditReg, withinReg} {
					require.NoError(t, s.Pause(t.Context(), scopedStream, id, t0, "admin", ""))
				}
			}
			srv := api
			if c.admin {
				srv = admin
			}
			do := func(id string) (int, string) {
				q := url.Values{}
				if c.query != nil {
					q = c.query(id)
				}
				path, body, ct := c.path, "", ""
				if c.body != nil {
					body, ct = c.body(id), "application/json"
				} else {
					q.Set("stream", scopedStream)
					q.Set("id", id)
				}
				if len(q) > 0 {
					path += "?" + q.Encode()
				}
				return call(t, srv, c.method, path, ct, tok, body)
			}

			before := regState(t, s, auditReg)
			code, body := do(auditReg)
			require.Equal(t, http.StatusForbidden, code, body)
			require.Contains(t, errorOf(t, body), `made by the subscription of stream prefix tenant/, which this token's scope (tenant/42/) does not cover`)
			require.Equal(t, before, regState(t, s, auditReg), "the admin's receiver's registration is unchanged")
			if c.name == "resend" {
				queued, err := s.Resend(t.Context(), scopedStream, auditReg, 1, t0, "admin")
				require.NoError(t, err)
				require.True(t, queued, "nothing was queued for it")
			}

			code, body = do(ownReg)
			require.Equal(t, c.ok, code, body)
			code, body = do(withinReg)
			require.Equal(t, c.within, code, body)
			if c.within == http.StatusBadRequest {
				require.Contains(t, errorOf(t, body), `was made by the subscription of stream prefix tenant/42/:`, "refused to every token, admin included")
			}
		})
	}
}

// TestTenantsUnparkOfManyLeavesAnAdminSubscriptionsRegistrationParked: a
// tenant's unpark of every parked registration of its stream unparks its
// own and those of subscriptions within its scope, and leaves the one an
// admin's subscription beyond its scope made parked.
func TestTenantsUnparkOfManyLeavesAnAdminSubscriptionsRegistrationParked(t *testing.T) {
	s, _, api := subscribedTenant(t)
	tok := tokenIn(t, s, store.RoleOperator, "tenant/42/")
	before := regState(t, s, auditReg)

	code, body := call(t, api, http.MethodPost, "/v1/registrations/unpark?stream="+url.QueryEscape(scopedStream), "", tok, "")
	require.Equal(t, http.StatusOK, code, body)
	var out struct {
		Unparked []struct{ ID string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	var ids []string
	for _, v := range out.Unparked {
		ids = append(ids, v.ID)
	}
	require.ElementsMatch(t, []string{ownReg, withinReg}, ids)
	require.Equal(t, before, regState(t, s, auditReg), "still parked, as it was")
}

// TestTenantCannotTakeAnAdminSubscriptionsIDOnItsStreams: where the
// registration an admin's subscription of tenant/ made on a tenant's stream
// is gone (the admin removed it) or not yet made (a stream the register
// would create), a token scoped to tenant/42/ may not create one of the
// subscription's id there (403, naming the subscription, nothing written),
// so that it cannot keep the stream's records from that receiver; it still
// creates one of another id, and one of the id of a subscription within
// its scope on a stream that subscription does not follow.
func TestTenantCannotTakeAnAdminSubscriptionsIDOnItsStreams(t *testing.T) {
	s, _, api := subscribedTenant(t)
	tok := tokenIn(t, s, store.RoleOperator, "tenant/42/")
	code, body := call(t, api, http.MethodDelete, "/v1/registration?"+url.Values{"stream": {scopedStream}, "id": {auditReg}}.Encode(), "", testToken, "")
	require.Equal(t, http.StatusNoContent, code, body)
	register := func(stream, id string) (int, string) {
		return call(t, api, http.MethodPost, "/v1/registrations", "application/json", tok,
			fmt.Sprintf(`{"stream": %q, "id": %q, "namespace": "webhook", "url": "https://tenant.example/hook"}`, stream, id))
	}

	for _, stream := range []string{scopedStream, "tenant/42/new"} {
		code, body = register(stream, auditReg)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, errorOf(t, body), `registration stream=`+stream+` id=audit would take the place of the subscription stream_prefix=tenant/ id=audit, which this token's scope (tenant/42/) does not cover`)
		_, err := s.Get(t.Context(), stream, auditReg)
		require.ErrorIs(t, err, journal.ErrNotFound, "nothing was written")
	}
	head, err := s.Head(t.Context(), "tenant/42/new")
	require.NoError(t, err)
	require.Zero(t, head)
	_, err = s.Append(t.Context(), "tenant/42/new", journal.Entry{ID: "n1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	st, err := s.Get(t.Context(), "tenant/42/new", auditReg)
	require.NoError(t, err)
	require.Equal(t, "tenant/", st.Subscription, "its first record brought the admin's subscription")

	code, body = register(scopedStream, "other")
	require.Equal(t, http.StatusCreated, code, body)
	code, body = call(t, api, http.MethodDelete, "/v1/registration?"+url.Values{"stream": {scopedStream}, "id": {withinReg}}.Encode(), "", testToken, "")
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = register(scopedStream, withinReg)
	require.Equal(t, http.StatusCreated, code, body)
}

// TestSubscribeNamesTheStreamsATenantsRegistrationOfItsIDKeptFromIt: a
// tenant registered id audit on two of its streams before an admin
// subscribed tenant/ with that id; the subscribe's answer names those two
// (skipped, skipped_streams) and follows the rest, and counts neither a
// registration of another id, nor one outside the prefix, nor its own
// when the prefix is registered again.
func TestSubscribeNamesTheStreamsATenantsRegistrationOfItsIDKeptFromIt(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "herald.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, api := tenantServers(t, s)
	tok := tokenIn(t, s, store.RoleOperator, "tenant/42/")
	for _, r := range []struct{ stream, id, token string }{
		{"tenant/42/orders", auditReg, tok}, {"tenant/42/new", auditReg, tok}, {"tenant/42/other", ownReg, tok},
		{"elsewhere/x", auditReg, testToken},
	} {
		code, body := call(t, api, http.MethodPost, "/v1/registrations", "application/json", r.token,
			fmt.Sprintf(`{"stream": %q, "id": %q, "namespace": "webhook", "url": "https://tenant.example/hook"}`, r.stream, r.id))
		require.Equal(t, http.StatusCreated, code, body)
	}
	_, err = s.Append(t.Context(), "tenant/7/a", journal.Entry{ID: "a1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)

	for range 2 { // made, then registered again
		code, body := call(t, api, http.MethodPost, "/v1/subscriptions", "application/json", testToken,
			`{"stream_prefix": "tenant/", "id": "audit", "namespace": "webhook", "url": "https://audit.example/hook"}`)
		require.Equal(t, http.StatusOK, code, body)
		var got struct {
			Streams        int
			Skipped        []string
			SkippedStreams int `json:"skipped_streams"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		require.Equal(t, []string{"tenant/42/new", "tenant/42/orders"}, got.Skipped, body)
		require.Equal(t, 2, got.SkippedStreams)
		require.Equal(t, 2, got.Streams, "tenant/42/other and tenant/7/a")
	}

	// The list with its streams names them the same way; without, as
	// before, nothing but the count.
	for q, want := range map[string][]string{"?streams=true": {"tenant/42/new", "tenant/42/orders"}, "": nil} {
		code, body := call(t, api, http.MethodGet, "/v1/subscriptions"+q, "", testToken, "")
		require.Equal(t, http.StatusOK, code, body)
		var list []struct {
			ID             string
			Skipped        []string
			SkippedStreams int `json:"skipped_streams"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		require.Len(t, list, 1, body)
		require.Equal(t, want, list[0].Skipped, "%s: %s", q, body)
		require.Equal(t, len(want), list[0].SkippedStreams, "%s: %s", q, body)
	}
}
