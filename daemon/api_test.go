package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// noTransport refuses every delivery: these tests drive the API, not the
// wire.
var noTransport = push.TransportFunc(func(context.Context, push.Registration, push.Message, time.Time) (push.Outcome, error) {
	return push.Outcome{}, fmt.Errorf("no delivery in this test")
})

// apiServer serves the HTTP API of a daemon on s (webhook namespace) on a
// loopback httptest server.
func apiServer(t *testing.T, s store.Backend, token string) *httptest.Server {
	t.Helper()
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()},
		APIToken: token, Now: func() time.Time { return t0 },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(d.APIHandler())
	t.Cleanup(srv.Close)
	return srv
}

// call sends body (JSON) with content type ct and token; it returns the
// status and the body answered.
func call(t *testing.T, srv *httptest.Server, method, path, ct, token, body string) (int, string) {
	t.Helper()
	resp, answer := send(t, srv, request(t, srv, method, path, ct, token, body))
	return resp.StatusCode, answer
}

// request is a request to srv's path with body, its Content-Type ct and
// bearer token, each unless empty.
func request(t *testing.T, srv *httptest.Server, method, path, ct, token, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

func post(t *testing.T, srv *httptest.Server, path, body string) (int, string) {
	return call(t, srv, http.MethodPost, path, "application/json", "", body)
}

// errorOf decodes an error answer, failing if it is not {"error": "..."}.
func errorOf(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), "not a JSON error: %q", body)
	require.NotEmpty(t, e.Error, body)
	return e.Error
}

const oneRecord = `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "order.created", "payload": {"total": 42}}]}`

func TestAPIAuth(t *testing.T) {
	srv := apiServer(t, memory.New(), testToken)
	for _, tok := range []string{"", "wrong", testToken[:31], testToken + "X"} {
		code, body := call(t, srv, http.MethodPost, "/v1/records", "application/json", tok, oneRecord)
		require.Equal(t, http.StatusUnauthorized, code, "token %q", tok)
		require.Contains(t, errorOf(t, body), "HERALD_API_TOKEN")
	}
	code, body := call(t, srv, http.MethodPost, "/v1/records", "application/json", testToken, oneRecord)
	require.Equal(t, http.StatusCreated, code, body)

	open := apiServer(t, memory.New(), "") // no token configured, on loopback
	code, body = post(t, open, "/v1/records", oneRecord)
	require.Equal(t, http.StatusCreated, code, body)
}

// An API without a token is refused at start on an address that is not
// loopback; with one, or on loopback, it starts.
func TestAPIRefusedOffLoopbackWithoutAToken(t *testing.T) {
	base := Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()}}
	o := base
	o.APIAddr = "0.0.0.0:0"
	_, err := New(o)
	require.ErrorContains(t, err, "Options.APIAddr")
	require.ErrorContains(t, err, "HERALD_API_TOKEN")
	o.APIToken, o.TLSTerminatedByProxy = testToken, true
	_, err = New(o)
	require.NoError(t, err)
	o = base
	o.APIAddr = "127.0.0.1:0"
	_, err = New(o)
	require.NoError(t, err)
}

func TestAPIAppendIsIdempotent(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	code, body := post(t, srv, "/v1/records", oneRecord)
	require.Equal(t, http.StatusCreated, code, body)
	var out appendResponse
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Equal(t, "orders/1", out.Stream)
	require.Len(t, out.Records, 1)
	require.Equal(t, uint64(1), out.Records[0].Seq)
	require.Equal(t, "application/json", out.Records[0].ContentType)

	code, body = post(t, srv, "/v1/records", oneRecord)
	require.Equal(t, http.StatusOK, code, "the same request again: nothing new: %s", body)
	head, err := s.Head(t.Context(), "orders/1")
	require.NoError(t, err)
	require.Equal(t, uint64(1), head, "nothing written twice")
	recs, err := s.Read(t.Context(), "orders/1", 1, 10, 0)
	require.NoError(t, err)
	require.JSONEq(t, `{"total": 42}`, string(recs[0].Payload))

	// One known and one new record: 201, and only the new one is written.
	code, body = post(t, srv, "/v1/records", `{"stream": "orders/1", "records": [
		{"id": "evt-1", "kind": "order.created", "payload": {"total": 42}},
		{"id": "evt-2", "kind": "order.paid", "payload": null, "final": true}]}`)
	require.Equal(t, http.StatusCreated, code, body)
	head, err = s.Head(t.Context(), "orders/1")
	require.NoError(t, err)
	require.Equal(t, uint64(2), head)
}

func TestAPIConflicts(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	code, body := post(t, srv, "/v1/records", oneRecord)
	require.Equal(t, http.StatusCreated, code, body)

	code, body = post(t, srv, "/v1/records", `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "order.created", "payload": {"total": 43}}]}`)
	require.Equal(t, http.StatusConflict, code, body)
	require.Contains(t, errorOf(t, body), "payload")

	code, body = post(t, srv, "/v1/records", `{"stream": "orders/1", "records": [{"id": "evt-9", "kind": "order.closed", "payload": {}, "final": true}]}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = post(t, srv, "/v1/records", `{"stream": "orders/1", "records": [{"id": "evt-10", "kind": "late", "payload": {}}]}`)
	require.Equal(t, http.StatusConflict, code, "sealed: %s", body)
	require.Contains(t, errorOf(t, body), "sealed")
	head, err := s.Head(t.Context(), "orders/1")
	require.NoError(t, err)
	require.Equal(t, uint64(2), head, "nothing written by the refused requests")
}

func TestAPIBadInput(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	for _, c := range []struct {
		name, ct, body string
		code           int
		want           string
	}{
		{"wrong content type", "text/plain", oneRecord, http.StatusUnsupportedMediaType, "application/json"},
		{"no content type", "", oneRecord, http.StatusUnsupportedMediaType, "application/json"},
		{"over the limit", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "payload": "` + strings.Repeat("x", MaxBody) + `"}]}`,
			http.StatusRequestEntityTooLarge, "limit of 8388608 bytes"},
		{"bad JSON", "application/json", `{"stream": "s", "records": [`, http.StatusBadRequest, "body"},
		{"not JSON", "application/json", `stream=s`, http.StatusBadRequest, "not valid JSON"},
		{"empty", "application/json", ``, http.StatusBadRequest, "body"},
		{"two values", "application/json", oneRecord + oneRecord, http.StatusBadRequest, "more than one JSON value"},
		{"unknown field", "application/json", `{"stream": "s", "records": [], "extra": 1}`, http.StatusBadRequest, `"extra"`},
		{"unknown record field", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "payload": {}, "sequence": 3}]}`,
			http.StatusBadRequest, `records[0]: has unknown field "sequence"`},
		{"wrong type", "application/json", `{"stream": 7, "records": []}`, http.StatusBadRequest, "stream: is a JSON number; want a string"},
		{"wrong record type", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "payload": {}, "final": "yes"}]}`,
			http.StatusBadRequest, "records[0].final: is a JSON string; want true or false"},
		{"no records", "application/json", `{"stream": "s"}`, http.StatusBadRequest, "records"},
		{"empty records", "application/json", `{"stream": "s", "records": []}`, http.StatusBadRequest, "records"},
		{"bad stream", "application/json", `{"stream": "", "records": [{"id": "a", "kind": "k", "payload": {}}]}`, http.StatusBadRequest, "stream"},
		{"bad id", "application/json", `{"stream": "s", "records": [{"id": "", "kind": "k", "payload": {}}]}`, http.StatusBadRequest, "records[0].id"},
		{"no payload", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k"}]}`, http.StatusBadRequest,
			"invalid records[0].payload: is missing or empty: content type application/json requires a JSON value"},
		{"no payload of a JSON type", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "content_type": "application/activity+json"}]}`,
			http.StatusBadRequest, "invalid records[0].payload: is missing"},
		{"both payloads", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "payload": {}, "payload_base64": "AA=="}]}`,
			http.StatusBadRequest, "records[0].payload"},
		{"JSON payload of another type, not a string", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "content_type": "text/plain", "payload": {"a": 1}}]}`,
			http.StatusBadRequest, "invalid records[0].payload: is a JSON object, but content_type \"text/plain\" takes a JSON string (its text) or payload_base64 (its bytes)"},
		{"bad base64", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "content_type": "text/plain", "payload_base64": "%%%"}]}`,
			http.StatusBadRequest, "records[0].payload_base64"},
		{"base64 that is not JSON for a JSON type", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "payload_base64": "aGk="}]}`,
			http.StatusBadRequest, "records[0].payload"},
		{"hostile value is escaped", "application/json", `{"stream": "s", "records": [{"id": "a", "kind": "k", "content_type": "<script>\u001b", "payload_base64": ""}]}`,
			http.StatusBadRequest, "records[0].content_type"},
	} {
		code, body := call(t, srv, http.MethodPost, "/v1/records", c.ct, "", c.body)
		require.Equal(t, c.code, code, "%s: %s", c.name, body)
		require.Contains(t, errorOf(t, body), c.want, c.name)
		require.NotContains(t, body, "<script>", "%s: HTML is escaped in JSON", c.name)
		require.NotContains(t, body, "\x1b", "%s: control characters are escaped", c.name)
	}
	streams, err := s.Streams(t.Context(), store.StreamQuery{})
	require.NoError(t, err)
	require.Empty(t, streams, "bad input changed nothing")
}

// A body that is not UTF-8, escapes a lone surrogate, gives a key twice or,
// for a field, in two cases, is refused naming the problem, as append
// --file refuses such a line: encoding/json would replace the bytes (ids
// "a\xff" and "a\xfe" would be one) or keep the last value.
func TestAPIRefusesBodiesNotUTF8OrWithARepeatedKey(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	for _, c := range []struct{ path, body, want string }{
		{"/v1/records", "{\"stream\": \"s\", \"records\": [{\"id\": \"a\xff\", \"kind\": \"k\", \"payload\": {}}]}",
			"invalid body: is not valid UTF-8 (byte 38): send text as UTF-8, other bytes as a record's payload_base64"},
		{"/v1/registrations", "{\"stream\": \"h/\xff\xfe\", \"id\": \"r\", \"url\": \"https://example.com/\"}",
			"invalid body: is not valid UTF-8 (byte 15): send text as UTF-8, other bytes as a record's payload_base64"},
		{"/v1/registrations", `{"stream": "h/1", "stream": "h/2", "id": "r", "url": "https://example.com/"}`,
			`invalid body: has the key "stream" twice: give it once`},
		{"/v1/records", `{"stream": "s", "records": [{"id": "a", "kind": "k", "payload": {"n": 1, "n": 2}}]}`,
			`invalid records[0].payload: has the key "n" twice: give it once`},
		{"/v1/registrations", `{"stream": "h/1", "id": "r", "url": "https://a.example/", "URL": "https://b.example/"}`,
			`invalid body: has the keys "url" and "URL", which name one field whatever the case: give it once`},
		{"/v1/records", `{"stream": "s", "records": [{"id": "a", "kind": "k"}, {"id": "a\udcff", "kind": "k", "payload": {}}]}`,
			`invalid records[1].id: escapes half a UTF-16 surrogate pair alone (\udcff), which JSON decoders read as U+FFFD: escape both halves (\ud83d\ude00), or send the character as UTF-8`},
		{"/v1/registrations", `{"stream": "h/\ud800", "id": "r", "url": "https://example.com/"}`,
			`invalid stream: escapes half a UTF-16 surrogate pair alone (\ud800), which JSON decoders read as U+FFFD: escape both halves (\ud83d\ude00), or send the character as UTF-8`},
	} {
		code, body := post(t, srv, c.path, c.body)
		require.Equal(t, http.StatusBadRequest, code, "%q: %s", c.body, body)
		require.Equal(t, c.want, errorOf(t, body), c.body)
	}
	streams, err := s.Streams(t.Context(), store.StreamQuery{})
	require.NoError(t, err)
	require.Empty(t, streams, "bad input changed nothing")
}

// A webhook config's retiring secret with an until that is not a time is
// refused naming config.retiring[].until, never quoting the config.
func TestAPIRegistrationNamesARetiringUntilThatIsNotATime(t *testing.T) {
	srv := apiServer(t, memory.New(), "")
	reg := func(until string) string {
		return `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
			"retiring": [{"secret": "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "until": "` + until + `"}]}}`
	}
	code, body := post(t, srv, "/v1/registrations", reg("tomorrow"))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Equal(t, "invalid config.retiring[].until: must be an RFC 3339 time (2026-12-31T23:59:59Z)", errorOf(t, body))
	code, body = post(t, srv, "/v1/registrations", reg("2030-01-01T00:00:00Z"))
	require.Equal(t, http.StatusCreated, code, body)
}

// A config is free-form in a request body, so the body's checks compare
// its keys exactly: two keys of one config field whatever their case (one
// value would win) are refused by the config's own decode, naming the key
// and never quoting a secret, for a registration and a subscription, and
// nothing is stored (in PostgreSQL).
func TestAPIRefusesAConfigKeyGivenInTwoCases(t *testing.T) {
	s := pgtest.NewStore(t)
	srv := apiServer(t, s, "")
	const config = `"config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], "Secrets": ["whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"]}`
	for path, body := range map[string]string{
		"/v1/registrations": `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/", ` + config + `}`,
		"/v1/subscriptions": `{"stream_prefix": "tenant/8/", "id": "t8", "namespace": "webhook", "url": "https://t8.example/", ` + config + `}`,
	} {
		code, got := post(t, srv, path, body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", path, got)
		require.Equal(t, `invalid config.secrets: is given again as "Secrets", the same key whatever the case: give it once`, errorOf(t, got), path)
		require.NotContains(t, got, "whsec_", path)
	}
	_, err := s.Get(t.Context(), "orders/1", "billing")
	require.ErrorIs(t, err, journal.ErrNotFound, "a refused registration is not stored")
	requireNoSubscription(t, s, "a refused subscription is not stored")

	code, got := post(t, srv, "/v1/registrations", `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/", "config": {"Secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`)
	require.Equal(t, http.StatusCreated, code, "one key in any case is the field, as encoding/json reads it: %s", got)
}

// A payload that is not JSON is stored by the rule append --file's lines
// follow (operator.RecordInput): payload_base64 as its bytes, a JSON string
// of a text type as its text.
func TestAPIStoresPayloadsThatAreNotJSON(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	code, body := post(t, srv, "/v1/records", `{"stream": "s", "records": [
		{"id": "a", "kind": "k", "content_type": "application/octet-stream", "payload_base64": "AP8K"},
		{"id": "b", "kind": "k", "content_type": "text/plain; charset=utf-8", "payload": "héllo\n"}]}`)
	require.Equal(t, http.StatusCreated, code, body)
	recs, err := s.Read(t.Context(), "s", 1, 2, 0)
	require.NoError(t, err)
	require.Equal(t, []byte{0x00, 0xff, 0x0a}, recs[0].Payload)
	require.Equal(t, "application/octet-stream", recs[0].ContentType)
	require.Equal(t, "héllo\n", string(recs[1].Payload))
	require.Equal(t, "text/plain; charset=utf-8", recs[1].ContentType)
}

func TestAPINotRoutedIsJSON(t *testing.T) {
	srv := apiServer(t, memory.New(), "")
	code, body := call(t, srv, http.MethodGet, "/v1/nope", "", "", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, errorOf(t, body), "no such endpoint")
	code, body = call(t, srv, http.MethodGet, "/v1/records", "", "", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	require.Contains(t, errorOf(t, body), "use POST")
	code, body = call(t, srv, http.MethodPut, "/v1/registration?stream=s&id=x", "", "", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	require.Contains(t, errorOf(t, body), "GET or DELETE")
}

// TestAnAdminRouteAskedOfTheAPIAddressNamesTheAdminAddress: a route the
// other address serves (evidence, hosts, skip: the admin address's) is a
// 404 that says where to send it, not only that this address lacks it.
func TestAnAdminRouteAskedOfTheAPIAddressNamesTheAdminAddress(t *testing.T) {
	srv := apiServer(t, memory.New(), "")
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/evidence?stream=s&id=x"}, {http.MethodGet, "/v1/hosts"}, {http.MethodPost, "/v1/registration/skip?stream=s&id=x&to_seq=2"},
	} {
		code, body := call(t, srv, c.method, c.path, "", "", "")
		require.Equal(t, http.StatusNotFound, code, c.path)
		path, _, _ := strings.Cut(c.path, "?")
		require.Equal(t, path+" is served on the admin address (herald run --admin-addr), not on this one", errorOf(t, body))
	}
}

// A request's own text shown in a refusal (a path, a query parameter's
// name, a method) is cut as every value a refusal shows is (journal.Shown):
// 30 KB of it was answered whole.
func TestAPIRefusalsCutTheRequestsText(t *testing.T) {
	srv := apiServer(t, memory.New(), "")
	long := strings.Repeat("a", 30_000)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/" + long},
		{http.MethodGet, "/" + long},
		{http.MethodGet, "/v1/registration?stream=s&id=x&" + long + "=1"},
		{long, "/v1/records"},
	} {
		code, body := call(t, srv, c.method, c.path, "", "", "")
		require.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest, http.StatusMethodNotAllowed}, code)
		msg := errorOf(t, body)
		require.Less(t, len(msg), 1000, msg)
		require.Contains(t, msg, "… (", msg)
	}
}

func TestAPIRegistrations(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	reg := `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/hooks", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
	code, body := post(t, srv, "/v1/registrations", reg)
	require.Equal(t, http.StatusCreated, code, body)
	require.NotContains(t, body, "whsec_", "the config is never shown")
	var v operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, "billing.example:443", v.Host)
	code, body = post(t, srv, "/v1/registrations", reg)
	require.Equal(t, http.StatusOK, code, "an update: %s", body)

	for _, c := range []struct{ body, want string }{
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "config": {"secrets": ["nope"]}}`, "secret"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "config": {"headers": {"Connection": "close"}}}`, "config.headers[Connection]"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "config": {"headers": {"X-A": "1\r\nX-B: 2"}}}`, "config.headers[X-A]: has a value with a CR, LF"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "config": {"client_cert": "x"}}`, "config.client_key"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "config": {"proxy": "https://p.example"}}`, "config.proxy"},
		{`{"stream": "orders/1", "id": "x", "namespace": "smoke", "url": "https://x.example/"}`, "namespace"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "ftp://x.example/", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`, "url"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "on_4xx": "maybe"}`, "on_4xx"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "kinds": [""]}`, "kinds"},
		{`{"stream": "orders/1", "id": "x", "namespace": "webhook", "url": "https://x.example/", "config": []}`, "config"},
	} {
		code, body := post(t, srv, "/v1/registrations", c.body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", c.body, body)
		require.Contains(t, errorOf(t, body), c.want, c.body)
	}
	_, err := s.Get(t.Context(), "orders/1", "x")
	require.ErrorIs(t, err, journal.ErrNotFound, "refused registrations are not stored")

	code, body = call(t, srv, http.MethodGet, "/v1/registrations?stream=orders/1", "", "", "")
	require.Equal(t, http.StatusOK, code, body)
	var list []operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list, 1)
	code, body = call(t, srv, http.MethodGet, "/v1/registration?stream=orders/1&id=billing", "", "", "")
	require.Equal(t, http.StatusOK, code, body)
	code, body = call(t, srv, http.MethodGet, "/v1/registration?stream=orders/1", "", "", "")
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = call(t, srv, http.MethodPost, "/v1/registration/unpark?stream=orders/1&id=billing", "", "", "")
	require.Equal(t, http.StatusOK, code, body)
	code, body = call(t, srv, http.MethodDelete, "/v1/registration?stream=orders/1&id=billing", "", "", "")
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = call(t, srv, http.MethodGet, "/v1/registration?stream=orders/1&id=billing", "", "", "")
	require.Equal(t, http.StatusNotFound, code, body)
	errorOf(t, body)
	code, body = call(t, srv, http.MethodDelete, "/v1/registration?stream=orders/1&id=billing", "", "", "")
	require.Equal(t, http.StatusNotFound, code, body)
}

func TestAPIRecordStatus(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	for _, id := range []string{"a", "b"} {
		_, err := s.Register(t.Context(), push.Registration{Stream: "orders/1", ID: id, Namespace: "webhook", URL: "https://" + id + ".example/"})
		require.NoError(t, err)
	}
	code, body := post(t, srv, "/v1/records", oneRecord)
	require.Equal(t, http.StatusCreated, code, body)
	require.NoError(t, s.Skip(t.Context(), "orders/1", "a", 2, t0, "test"))

	for _, q := range []string{"id=evt-1", "stream=orders/1&seq=1"} {
		code, body = call(t, srv, http.MethodGet, "/v1/records/status?"+q, "", "", "")
		require.Equal(t, http.StatusOK, code, body)
		var st operator.RecordStatus
		require.NoError(t, json.Unmarshal([]byte(body), &st))
		require.Equal(t, "evt-1", st.Record.ID)
		require.Len(t, st.Acknowledged, 1)
		require.Equal(t, "a", st.Acknowledged[0].ID)
		require.Len(t, st.NotAcknowledged, 1)
		require.Equal(t, "b", st.NotAcknowledged[0].ID)
	}
	for q, want := range map[string]int{"id=nope": 404, "stream=orders/1&seq=9": 404, "stream=orders/1&seq=x": 400, "": 400, "id=evt-1&stream=other": 400} {
		code, body = call(t, srv, http.MethodGet, "/v1/records/status?"+q, "", "", "")
		require.Equal(t, want, code, "%s: %s", q, body)
		errorOf(t, body)
	}
}

// Many clients appending to one stream at once: every record is appended
// once, and the stream's seqs are gapless.
func TestAPIConcurrentAppendsSQLite(t *testing.T) { concurrentAppends(t, seedtest.SQLite(t)) }

func TestAPIConcurrentAppendsPostgres(t *testing.T) { concurrentAppends(t, pgtest.NewStore(t)) }

func concurrentAppends(t *testing.T, s store.Backend) {
	srv := apiServer(t, s, "")
	const clients, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients*each*2)
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"stream": "hot", "records": [{"id": "c%d-%d", "kind": "k", "payload": {"i": %d}}]}`, c, i, i)
				for range 2 { // every request twice: the second is a no-op
					resp, err := srv.Client().Post(srv.URL+"/v1/records", "application/json", bytes.NewReader([]byte(body)))
					if err != nil {
						errs <- err
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
						errs <- fmt.Errorf("%d: %s", resp.StatusCode, b)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs, err := s.Read(t.Context(), "hot", 1, 1000, 0)
	require.NoError(t, err)
	require.Len(t, recs, clients*each, "every record once")
	seen := map[string]bool{}
	for i, r := range recs {
		require.Equal(t, uint64(i+1), r.Seq, "gapless")
		require.False(t, seen[r.ID], "%s twice", r.ID)
		seen[r.ID] = true
	}
}

// far is the body of a webhook registration "far" of orders/1 with fields
// (each followed by a comma) before its config.
func far(fields string) string {
	return `{"stream": "orders/1", "id": "far", "namespace": "webhook", "url": "https://far.example/", ` + fields +
		`"config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
}

// requireFarRefused posts each body of says to srv and requires a 400
// whose error has its words; then that s holds no registration far.
func requireFarRefused(t *testing.T, srv *httptest.Server, s store.Backend, says map[string]string) {
	t.Helper()
	for body, words := range says {
		code, answer := post(t, srv, "/v1/registrations", body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", body, answer)
		require.Contains(t, errorOf(t, answer), words, body)
	}
	_, err := s.Get(t.Context(), "orders/1", "far")
	require.ErrorIs(t, err, journal.ErrNotFound, "a refused registration is not stored")
}

// from_seq 0, and one past the stream's head + 1, are refused naming the
// field (the OpenAPI document's minimum is 1) and nothing is stored; a
// from_seq in range starts the cursor there.
func TestAPIRegistrationFromSeqIsOneOrMore(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	_, err := s.Append(t.Context(), "orders/1", journal.Entry{ID: "o1", Kind: "order.created", Payload: []byte(`{}`), ContentType: "application/json"},
		journal.Entry{ID: "o2", Kind: "order.created", Payload: []byte(`{}`), ContentType: "application/json"})
	require.NoError(t, err)
	requireFarRefused(t, srv, s, map[string]string{far(`"from_seq": 0,`): "invalid from_seq: is 0", far(`"from_seq": 4,`): "invalid from_seq: is 4"})

	code, body := post(t, srv, "/v1/registrations", far(`"from_seq": 3,`))
	require.Equal(t, http.StatusCreated, code, body)
	st, err := s.Get(t.Context(), "orders/1", "far")
	require.NoError(t, err)
	require.Equal(t, uint64(3), st.NextSeq)
}

// A registration's window is taken, checked naming the field, and shown.
func TestAPIRegistrationWindow(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	requireFarRefused(t, srv, s, map[string]string{far(`"window": 0,`): "invalid window", far(`"window": -1,`): "invalid window", far(`"window": 65,`): "invalid window"})

	code, body := post(t, srv, "/v1/registrations", far(`"window": 16,`))
	require.Equal(t, http.StatusCreated, code, body)
	var v operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, 16, v.Window)
	st, err := s.Get(t.Context(), "orders/1", "far")
	require.NoError(t, err)
	require.Equal(t, 16, st.Window)

	code, body = post(t, srv, "/v1/registrations", far(""))
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, 1, v.Window, "an update without a window: strict order again, as herald register")
}

// A registration's retain_max is taken, checked naming the field, stored
// and shown, with the namespace's default when absent.
func TestAPIRegistrationRetainMax(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	requireFarRefused(t, srv, s, map[string]string{far(`"retain_max": "30m",`): "retain_max", far(`"retain_max": "soon",`): "retain_max",
		far(`"retain_max": "-2h",`): "retain_max", far(`"retain_max": 30,`): "retain_max"})

	code, body := post(t, srv, "/v1/registrations", far(`"retain_max": "30d",`))
	require.Equal(t, http.StatusCreated, code, body)
	var v operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, []any{"30d", false}, []any{v.RetainMax, v.RetainMaxDefault})
	st, err := s.Get(t.Context(), "orders/1", "far")
	require.NoError(t, err)
	require.Equal(t, 30*24*time.Hour, st.RetainMax)

	code, body = post(t, srv, "/v1/registrations", far(""))
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, []any{"90d", true}, []any{v.RetainMax, v.RetainMaxDefault}, "absent: the namespace's default")
}

// A registration's rate is taken, checked naming the field, stored and
// shown; an update without it removes it; a subscription takes none.
func TestAPIRegistrationRate(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	requireFarRefused(t, srv, s, map[string]string{far(`"rate": "10/sec",`): "rate", far(`"rate": "0/s",`): "rate", far(`"rate": "",`): "rate", far(`"rate": 10,`): "rate"})

	code, body := post(t, srv, "/v1/registrations", far(`"rate": "600/min",`))
	require.Equal(t, http.StatusCreated, code, body)
	var v operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, "600/min", v.Rate)
	st, err := s.Get(t.Context(), "orders/1", "far")
	require.NoError(t, err)
	require.Equal(t, store.Rate{Count: 600, Per: time.Minute}, st.Rate)

	code, body = post(t, srv, "/v1/registrations", far(`"rate": null,`))
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, `"rate"`, "an update without a rate: no limit")

	code, body = post(t, srv, "/v1/subscriptions", `{"stream_prefix": "tenant/8/", "id": "t8", "namespace": "webhook", "url": "https://t8.example/", "rate": "10/s"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, errorOf(t, body), "rate")
}

// A registration's retry policy is taken, checked naming the field, and
// shown; an update without it leaves the namespace's.
func TestAPIRegistrationRetryPolicy(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	requireFarRefused(t, srv, s, map[string]string{far(`"retry_schedule": ["5s", "soon"],`): "invalid retry_schedule", far(`"retry_schedule": ["0s"],`): "invalid retry_schedule",
		far(`"retry_for": "3 days",`): "invalid retry_for", far(`"retry_for": "1s",`): "invalid retry_for", far(`"max_attempts": -1,`): "invalid max_attempts"})

	code, body := post(t, srv, "/v1/registrations", far(`"retry_schedule": ["5s", "5m", "10h"], "retry_for": "3d",`))
	require.Equal(t, http.StatusCreated, code, body)
	var v operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, &operator.RetryView{Schedule: []string{"5s", "5m", "10h"}, For: "3d"}, v.Retry)
	st, err := s.Get(t.Context(), "orders/1", "far")
	require.NoError(t, err)
	require.Equal(t, push.RetryPolicy{Schedule: []time.Duration{5 * time.Second, 5 * time.Minute, 10 * time.Hour}, For: 72 * time.Hour}, st.Retry)

	code, body = post(t, srv, "/v1/registrations", far(""))
	require.Equal(t, http.StatusOK, code, body)
	v = operator.RegistrationView{}
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Nil(t, v.Retry, "an update without a policy: the namespace's again")
}

// A URL the daemon's network guard will refuse is registered, as herald
// register registers it, and answered with warnings naming each flag that
// lifts a rule; what the daemon's transport allows gets none.
func TestAPIRegistrationWarnsOfTheNetworkGuard(t *testing.T) {
	reg := func(url string) string {
		return `{"stream": "orders/1", "id": "r", "namespace": "webhook", "url": "` + url +
			`", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
	}
	for _, c := range []struct {
		opts transport.Options
		url  string
		want []string // each warning names this
	}{
		{transport.Options{}, "https://hooks.example/x", nil},
		{transport.Options{}, "http://127.0.0.2:8080/x", []string{"--allow-http", "--allow-private-network"}},
		{transport.Options{AllowHTTP: true}, "http://127.0.0.2:8080/x", []string{"--allow-private-network"}},
		{transport.Options{AllowHTTP: true, AllowPrivateNetwork: true}, "http://127.0.0.2:8080/x", nil},
		{transport.Options{AllowHosts: []string{"*.example"}}, "https://hooks.test/x", []string{"--allow-host"}},
		{transport.Options{}, "https://169.254.169.254/x", []string{"169.254.169.254"}},
	} {
		s := memory.New()
		tr, err := transport.New(c.opts)
		require.NoError(t, err)
		d, err := New(Options{Store: s, Transport: tr, Projections: []push.Projection{webhook.New()},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		srv := httptest.NewServer(d.APIHandler())
		for _, want := range []int{http.StatusCreated, http.StatusOK} {
			code, body := post(t, srv, "/v1/registrations", reg(c.url))
			require.Equal(t, want, code, "%s: %s", c.url, body)
			var v operator.RegisteredView
			require.NoError(t, json.Unmarshal([]byte(body), &v))
			require.Len(t, v.Warnings, len(c.want), "%+v %s: %s", c.opts, c.url, body)
			for i, w := range c.want {
				require.Contains(t, v.Warnings[i], "this daemon's deliveries refuse this URL and would park the registration", c.url)
				require.Contains(t, v.Warnings[i], w, c.url)
			}
			if len(c.want) == 0 {
				require.NotContains(t, body, "warnings", "no warnings: the field is absent")
			}
		}
		_, err = s.Get(t.Context(), "orders/1", "r")
		require.NoError(t, err, "%s: registered all the same", c.url)
		srv.Close()
	}
}

// The HTTP API's POST routes take their input in the body and no query (a
// ?stream=… was dropped and the body's stream used), and the record status
// reads a strict query (?id=a&id=b answered a): each is a 400 that changes
// nothing.
func TestAPIRefusesQueriesItWouldNotRead(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	code, body := post(t, srv, "/v1/records", `{"stream":"api/s","records":[{"id":"evt-1","kind":"k","payload":{}}]}`)
	require.Equal(t, http.StatusCreated, code, body)
	for _, c := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/v1/records?stream=zzz", `{"stream":"api/s","records":[{"id":"evt-2","kind":"k","payload":{}}]}`, "invalid query: /v1/records takes no query parameters"},
		{http.MethodPost, "/v1/registrations?stream=other", `{"stream":"api/s","id":"r","namespace":"webhook","url":"https://hooks.example/x","config":{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`, "invalid query: /v1/registrations takes no query parameters"},
		{http.MethodGet, "/v1/records/status?id=evt-1&id=evt-2", "", "invalid id: is given 2 times"},
		{http.MethodGet, "/v1/records/status?id=evt-1&bogus=1", "", "invalid bogus: is not a parameter of /v1/records/status"},
		{http.MethodGet, "/v1/records/status?stream=api/s&seq=1&seq=2", "", "invalid seq: is given 2 times"},
	} {
		code, body := call(t, srv, c.method, c.path, "application/json", "", c.body)
		require.Equal(t, http.StatusBadRequest, code, "%s %s: %s", c.method, c.path, body)
		require.Contains(t, errorOf(t, body), c.want, c.path)
	}
	recs, err := s.Read(t.Context(), "api/s", 1, 10, 0)
	require.NoError(t, err)
	require.Len(t, recs, 1, "nothing appended")
	_, err = s.Get(t.Context(), "api/s", "r")
	require.ErrorIs(t, err, journal.ErrNotFound, "nothing registered")
	code, body = call(t, srv, http.MethodGet, "/v1/records/status?id=evt-1", "", "", "")
	require.Equal(t, http.StatusOK, code, body)
}

// A window above the daemon's --max-per-host is answered with a warning
// naming this daemon's cap; one within it gets none.
func TestAPIRegistrationWarnsOfAWindowAboveMaxPerHost(t *testing.T) {
	d, err := New(Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		WorkerOptions: []push.Option{push.WithMaxPerHost(8)}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(d.APIHandler())
	t.Cleanup(srv.Close)
	for window, want := range map[int]string{8: "", 16: "window 16 is above this daemon's --max-per-host (8)"} {
		code, body := post(t, srv, "/v1/registrations", fmt.Sprintf(`{"stream": "s", "id": "r%d", "namespace": "webhook", "url": "https://hooks.example/x", "window": %d, "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`, window, window))
		require.Equal(t, http.StatusCreated, code, body)
		var v operator.RegisteredView
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		if want == "" {
			require.Empty(t, v.Warnings, body)
			continue
		}
		require.Len(t, v.Warnings, 1, body)
		require.Contains(t, v.Warnings[0], want)
	}
}

// POST /v1/registrations takes the webhook config's envelope as herald
// register --envelope does: stored with the registration; a value that is
// not a boolean is a 400 naming config.envelope and changes nothing.
func TestAPIRegistrationStoresTheWebhookEnvelope(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	reg := func(envelope string) string {
		return `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/hooks",
			"config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], "envelope": ` + envelope + `}}`
	}
	envelope := func() bool { return webhookConfig(t, s, "orders/1", "billing").Envelope }
	code, body := post(t, srv, "/v1/registrations", reg("true"))
	require.Equal(t, http.StatusCreated, code, body)
	require.True(t, envelope())
	code, body = post(t, srv, "/v1/registrations", reg(`"no"`))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, errorOf(t, body), "invalid config.envelope: must be a JSON boolean")
	require.True(t, envelope(), "a refused update changes nothing")
	code, body = post(t, srv, "/v1/registrations", reg("false"))
	require.Equal(t, http.StatusOK, code, body)
	require.False(t, envelope())
}

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// postTraced posts body to base's /v1/records with the given trace headers
// (each value a header line of its own).
func postTraced(t *testing.T, base, body string, traceparent, tracestate []string) (int, string) {
	return postTo(t, base+"/v1/records", body, traceparent, tracestate)
}

func postTo(t *testing.T, url, body string, traceparent, tracestate []string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for _, v := range traceparent {
		req.Header.Add("Traceparent", v)
	}
	for _, v := range tracestate {
		req.Header.Add("Tracestate", v)
	}
	resp, b := sendWith(t, http.DefaultClient, req)
	return resp.StatusCode, b
}

// Bad trace context, in a header or a record, is a 400 naming it, and
// nothing is appended.
func TestAPIRefusesBadTraceContext(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	two := `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "k", "payload": {}}, {"id": "evt-2", "kind": "k", "payload": {}}]}`
	cases := []struct {
		name       string
		body       string
		tp, ts     []string
		wantsField string
	}{
		{"not a traceparent", two, []string{"hello"}, nil, "traceparent header"},
		{"upper case", two, []string{strings.ToUpper(testTraceparent)}, nil, "traceparent header"},
		{"zero trace id", two, []string{"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, nil, "traceparent header"},
		{"version ff", two, []string{"ff" + testTraceparent[2:]}, nil, "traceparent header"},
		{"twice", two, []string{testTraceparent, testTraceparent}, nil, "traceparent header"},
		{"empty", two, []string{" "}, nil, "traceparent header"},
		{"tracestate alone", two, nil, []string{"a=b"}, "tracestate header"},
		{"tracestate not ASCII", two, []string{testTraceparent}, []string{"a=\u00e9"}, "tracestate header"},
		{"a record's", `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "k", "payload": {}}, {"id": "evt-2", "kind": "k", "payload": {}, "traceparent": "00-x"}]}`,
			[]string{testTraceparent}, nil, "records[1].traceparent"},
		{"a record's tracestate alone", `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "k", "payload": {}, "tracestate": "a=b"}]}`,
			[]string{testTraceparent}, nil, "records[0].tracestate"},
	}
	for _, c := range cases {
		code, body := postTraced(t, srv.URL, c.body, c.tp, c.ts)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", c.name, body)
		require.Contains(t, errorOf(t, body), "invalid "+c.wantsField, c.name)
	}
	head, err := s.Head(t.Context(), "orders/1")
	require.NoError(t, err)
	require.Zero(t, head, "a refused request appends nothing")
}

// The header's trace context is stored with each record that names none;
// a record's own fields win; a repeated append keeps what was stored.
func TestAPIStoresTraceContext(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	body := `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "k", "payload": {}},
		{"id": "evt-2", "kind": "k", "payload": {}, "traceparent": "` + own + `"}]}`
	code, out := postTraced(t, srv.URL, body, []string{testTraceparent}, []string{"rojo=00f067aa0ba902b7", "congo=t61rcWkgMzE"})
	require.Equal(t, http.StatusCreated, code, out)
	var resp appendResponse
	require.NoError(t, json.Unmarshal([]byte(out), &resp))
	require.Equal(t, testTraceparent, resp.Records[0].Traceparent)
	require.Equal(t, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", resp.Records[0].Tracestate, "several tracestate headers are one list")
	require.Equal(t, own, resp.Records[1].Traceparent)
	require.Empty(t, resp.Records[1].Tracestate, "a record naming its own traceparent takes none of the header's")

	recs, err := s.Read(t.Context(), "orders/1", 1, 10, 0)
	require.NoError(t, err)
	require.Equal(t, testTraceparent, recs[0].Traceparent)
	require.Equal(t, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", recs[0].Tracestate)
	require.Equal(t, own, recs[1].Traceparent)

	code, out = postTraced(t, srv.URL, body, []string{own}, nil)
	require.Equal(t, http.StatusOK, code, "trace context is not content: the same records: %s", out)
	recs, err = s.Read(t.Context(), "orders/1", 1, 10, 0)
	require.NoError(t, err)
	require.Equal(t, testTraceparent, recs[0].Traceparent, "the stored trace context is kept")
}

// The idempotent 200 answers each record as stored, with the trace context
// of its first append, as the 201 did: on every store.
func TestAPIRepeatedAppendAnswersTheStoredTraceContext(t *testing.T) {
	sq, pg := seedtest.SQLite(t), pgtest.NewStore(t)
	const other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	body := `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "k", "payload": {}}]}`
	for name, s := range map[string]store.Backend{"memory": memory.New(), "sqlite": sq, "postgres": pg} {
		srv := apiServer(t, s, "")
		var first, again appendResponse
		code, out := postTraced(t, srv.URL, body, []string{testTraceparent}, []string{"rojo=00f067aa0ba902b7"})
		require.Equal(t, http.StatusCreated, code, "%s: %s", name, out)
		require.NoError(t, json.Unmarshal([]byte(out), &first))
		for _, tp := range [][]string{nil, {other}} {
			code, out = postTraced(t, srv.URL, body, tp, nil)
			require.Equal(t, http.StatusOK, code, "%s: %s", name, out)
			require.NoError(t, json.Unmarshal([]byte(out), &again))
			require.Equal(t, first, again, "%s, repeated with traceparent %v: the stored record, as the 201 answered it", name, tp)
			require.Equal(t, testTraceparent, again.Records[0].Traceparent, name)
			require.Equal(t, "rojo=00f067aa0ba902b7", again.Records[0].Tracestate, name)
		}
	}
}

// End to end: a record appended through the HTTP API of a running daemon
// with a traceparent header reaches a loopback receiver with a child of it:
// the appended trace id, a new span id, the flags kept, the tracestate.
func TestAPITraceReachesTheReceiver(t *testing.T) {
	type seen struct{ parent, state string }
	got := make(chan seen, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Traceparent"), r.Header.Get("Tracestate")}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	s := seedtest.SQLite(t)
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second})
	require.NoError(t, err)
	d := start(t, Options{Store: s, Transport: tr, Projections: []push.Projection{webhook.New()}, APIAddr: "127.0.0.1:0",
		Every: time.Hour}) // only the append wakes the worker
	api := "http://" + d.Addrs.API

	reg := `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "` + recv.URL + `/hook",
		"config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
	code, body := postTo(t, api+"/v1/registrations", reg, nil, nil)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = postTraced(t, api, `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "order.created", "payload": {"total": 42}}]}`,
		[]string{testTraceparent}, []string{"rojo=00f067aa0ba902b7"})
	require.Equal(t, http.StatusCreated, code, body)

	var first seen
	select {
	case first = <-got:
	case <-d.stopped:
		t.Fatalf("the daemon stopped: %v", *d.runErr)
	case <-time.After(30 * time.Second): // a network timeout, not synchronisation
		t.Fatal("no delivery within 30 s of the append")
	}
	require.NoError(t, journal.ValidateTraceparent("received", first.parent))
	require.Equal(t, testTraceparent[:36], first.parent[:36], "the appended trace id")
	require.NotEqual(t, testTraceparent[36:52], first.parent[36:52], "a new span id")
	require.Equal(t, "01", first.parent[53:], "the sampled flag kept")
	require.Equal(t, "rojo=00f067aa0ba902b7", first.state)
}

// POST /v1/subscriptions follows the streams under a prefix, existing and
// future; GET lists it as one with its streams' cursors on request; DELETE
// removes every registration it made; bad prefixes, and another from than
// the subscription was made with, are a 400 naming the field, storing
// nothing.
func TestAPISubscriptionByStreamPrefix(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	_, err := s.Append(t.Context(), "tenant/42/orders", journal.Entry{ID: "o1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	body := func(prefix, extra string) string {
		return `{"stream_prefix": "` + prefix + `", "id": "t42", "namespace": "webhook", "url": "https://t42.example/", ` + extra +
			`"config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`
	}
	for _, bad := range []string{body("tenant/42", ""), body("herald/", ""), body("tenant/42/", `"from": "middle",`), body("tenant/42/", `"stream": "x",`)} {
		code, got := post(t, srv, "/v1/subscriptions", bad)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", bad, got)
	}
	requireNoSubscription(t, s, "refusals store nothing")

	code, got := post(t, srv, "/v1/subscriptions", body("tenant/42/", `"from": "head",`))
	require.Equal(t, http.StatusOK, code, got)
	var v operator.SubscriptionView
	require.NoError(t, json.Unmarshal([]byte(got), &v))
	require.Equal(t, []any{"tenant/42/", "t42", "head", 1}, []any{v.Prefix, v.ID, v.From, v.Streams})
	_, err = s.Append(t.Context(), "tenant/42/invoices", journal.Entry{ID: "i1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)

	code, got = call(t, srv, http.MethodGet, "/v1/subscriptions?streams=true", "", "", "")
	require.Equal(t, http.StatusOK, code, got)
	var vs []operator.SubscriptionView
	require.NoError(t, json.Unmarshal([]byte(got), &vs))
	require.Len(t, vs, 1)
	require.Equal(t, 2, vs[0].Streams)
	cursors := map[string]uint64{}
	for _, r := range vs[0].Registrations {
		cursors[r.Stream] = r.NextSeq
		require.Equal(t, "tenant/42/", r.Subscription)
	}
	require.Equal(t, map[string]uint64{"tenant/42/orders": 2, "tenant/42/invoices": 1}, cursors)

	// Where its existing streams started is set when it is made.
	code, got = post(t, srv, "/v1/subscriptions", body("tenant/42/", `"from": "start",`))
	require.Equal(t, http.StatusBadRequest, code, got)
	require.Contains(t, errorOf(t, got), "invalid from: is start, but stream_prefix=tenant/42/ id=t42 exists, its streams started from head")
	code, got = post(t, srv, "/v1/subscriptions", body("tenant/42/", ""))
	require.Equal(t, http.StatusOK, code, got)
	require.NoError(t, json.Unmarshal([]byte(got), &v))
	require.Equal(t, "head", v.From, "an update without from keeps it")

	code, got = call(t, srv, http.MethodDelete, "/v1/subscription?stream_prefix=tenant/42/&id=t42", "", "", "")
	require.Equal(t, http.StatusOK, code, got)
	require.JSONEq(t, `{"registrations_removed": 2}`, got)
	code, got = call(t, srv, http.MethodDelete, "/v1/subscription?stream_prefix=tenant/42/&id=t42", "", "", "")
	require.Equal(t, http.StatusNotFound, code, got)
}

// A webhook registered over the API without secrets gets one, answered
// once; an update without secrets keeps it and answers none.
func TestAPIRegistrationWithoutSecretsGetsOneOnce(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	reg := `{"stream": "orders/1", "id": "made", "namespace": "webhook", "url": "https://billing.example/hooks", "config": {"headers": {"X-Tenant": "42"}}}`
	code, body := post(t, srv, "/v1/registrations", reg)
	require.Equal(t, http.StatusCreated, code, body)
	var v operator.RegisteredView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.True(t, strings.HasPrefix(v.Secret, "whsec_"), body)
	require.Equal(t, []string{"X-Tenant"}, v.Headers)
	code, body = post(t, srv, "/v1/registrations", reg)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "whsec_")
	require.Equal(t, []string{v.Secret}, webhookConfig(t, s, "orders/1", "made").Secrets, "the update kept the secret made")
}

// webhookConfig is the config s holds for the webhook registration id of
// stream.
func webhookConfig(t *testing.T, s store.Backend, stream, id string) webhook.Config {
	t.Helper()
	st, err := s.Get(t.Context(), stream, id)
	require.NoError(t, err)
	cfg, err := webhook.ParseConfig(st.Config)
	require.NoError(t, err)
	return cfg
}

// A webhook subscription made over the API without secrets gets one,
// answered once, which each of its registrations holds; an update keeps it.
// Its retry policy is its registrations'.
func TestAPISubscriptionWithoutSecretsGetsOneOnceAndItsRetryPolicy(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	_, err := s.Append(t.Context(), "tenant/7/orders", journal.Entry{ID: "o1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	sub := `{"stream_prefix": "tenant/7/", "id": "t7", "namespace": "webhook", "url": "https://t7.example/hooks",
		"retry_schedule": ["5s", "5m", "2h"], "retry_for": "3d"}`
	code, body := post(t, srv, "/v1/subscriptions", sub)
	require.Equal(t, http.StatusOK, code, body)
	var v operator.SubscriptionView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.True(t, strings.HasPrefix(v.Secret, "whsec_"), body)
	require.Equal(t, &operator.RetryView{Schedule: []string{"5s", "5m", "2h"}, For: "3d"}, v.Retry)

	code, body = post(t, srv, "/v1/subscriptions", sub)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "whsec_")
	require.Equal(t, []string{v.Secret}, webhookConfig(t, s, "tenant/7/orders", "t7").Secrets, "the registration signs with the secret made, kept by the update")
	st, err := s.Get(t.Context(), "tenant/7/orders", "t7")
	require.NoError(t, err)
	require.Equal(t, store.RetryPolicy{Schedule: []time.Duration{5 * time.Second, 5 * time.Minute, 2 * time.Hour}, For: 72 * time.Hour}, st.Retry)

	code, body = post(t, srv, "/v1/subscriptions", `{"stream_prefix": "tenant/8/", "id": "t8", "namespace": "webhook", "url": "https://t8.example/", "retry_for": "3x"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "retry_for")
}

// Rotations racing on one registration each answer a secret that signs:
// every secret a 200 gave is in the config stored after them all, the
// last as the secret and the others retiring (expire_old 1h), none lost
// to a rotation that read the config before another wrote it.
func TestAPIRacingRotationsEachAnswerASecretThatSigns(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	code, body := post(t, srv, "/v1/registrations", `{"stream": "orders/1", "id": "billing", "namespace": "webhook", "url": "https://billing.example/hooks"}`)
	require.Equal(t, http.StatusCreated, code, body)
	const racers = 6
	secrets := make(chan string, racers)
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			code, body := post(t, srv, "/v1/registration/rotate-secret?stream=orders/1&id=billing&expire_old=1h", "")
			var v operator.RotatedView
			if code == http.StatusOK && json.Unmarshal([]byte(body), &v) == nil {
				secrets <- v.Secret
			}
		})
	}
	wg.Wait()
	close(secrets)
	cfg := webhookConfig(t, s, "orders/1", "billing")
	signing := append([]string(nil), cfg.Secrets...)
	for _, r := range cfg.Retiring {
		signing = append(signing, r.Secret)
	}
	n := 0
	for secret := range secrets {
		require.Contains(t, signing, secret, "a 200's secret signs")
		n++
	}
	require.Equal(t, racers, n, "each rotation answered 200")
}

// TestAPIRefusesAURLThatCanNeverBeDialled: a port outside 1–65535 (the
// URL's or its proxy's), or a non-ASCII host IDNA refuses, failed every
// attempt as a down host, held and never parked; such a URL is refused
// naming its field, and nothing stored.
func TestAPIRefusesAURLThatCanNeverBeDialled(t *testing.T) {
	s := seedtest.SQLite(t)
	srv := apiServer(t, s, "")
	for id, c := range map[string]struct{ url, proxy, field string }{
		"zero":  {"http://127.0.0.1:0/hook", "", "invalid url:"},
		"past":  {"http://127.0.0.1:99999/hook", "", "invalid url:"},
		"v6":    {"https://[::1]:65536/hook", "", "invalid url:"},
		"rtl":   {"https://a\u202eb.example/hook", "", "invalid url:"},
		"proxy": {"https://ok.example/hook", "http://127.0.0.1:99999", "invalid config.proxy:"},
	} {
		reg := map[string]any{"stream": "orders", "id": id, "namespace": "webhook", "url": c.url}
		if c.proxy != "" {
			reg["config"] = map[string]string{"proxy": c.proxy}
		}
		b, _ := json.Marshal(reg)
		code, body := post(t, srv, "/v1/registrations", string(b))
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, errorOf(t, body), c.field, id)
		_, err := s.Get(t.Context(), "orders", id)
		require.ErrorIs(t, err, journal.ErrNotFound, id)
	}
}

// TestAPINamesAWronglyTypedFieldAsTheBodyDoes: a field of the shared part of
// a registration's and a subscription's body, given a value of the wrong
// JSON type, is named as the client wrote it ("window"), never by the Go
// type it is decoded into ("endpointRequest.window"), and nothing is stored.
func TestAPINamesAWronglyTypedFieldAsTheBodyDoes(t *testing.T) {
	s := seedtest.SQLite(t)
	srv := apiServer(t, s, "")
	for field, value := range map[string]any{"namespace": 1, "url": 1, "on_4xx": true, "kinds": "order.*", "window": "NaN",
		"retry_schedule": "5s", "max_attempts": 1.5, "retry_for": 3, "retain_max": 30} {
		for path, body := range map[string]map[string]any{
			"/v1/registrations": {"stream": "orders", "id": "typed"},
			"/v1/subscriptions": {"stream_prefix": "orders/", "id": "typed"},
		} {
			maps.Copy(body, map[string]any{"namespace": "webhook", "url": "https://ok.example/hook", field: value})
			b, _ := json.Marshal(body)
			code, answer := post(t, srv, path, string(b))
			require.Equal(t, http.StatusBadRequest, code, answer)
			require.True(t, strings.HasPrefix(errorOf(t, answer), "invalid "+field+": is a JSON "), "%s %s: %s", path, field, answer)
		}
	}
	regs, err := s.List(t.Context(), store.ListQuery{})
	require.NoError(t, err)
	require.Empty(t, regs)
	requireNoSubscription(t, s)
}

// TestAPISubscriptionPrefixWithNoRoomForAStreamIsNamed: a stream_prefix of
// 200 bytes, under which no stream fits, is refused naming stream_prefix
// (it named stream, a field the body does not have).
func TestAPISubscriptionPrefixWithNoRoomForAStreamIsNamed(t *testing.T) {
	s := seedtest.SQLite(t)
	srv := apiServer(t, s, "")
	b, _ := json.Marshal(map[string]any{"stream_prefix": strings.Repeat("a", 199) + "/", "id": "x", "namespace": "webhook", "url": "https://ok.example/hook"})
	code, body := post(t, srv, "/v1/subscriptions", string(b))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.True(t, strings.HasPrefix(errorOf(t, body), "invalid stream_prefix: is 200 bytes"), body)
	requireNoSubscription(t, s)
}

// TestAPIUpdateSaysItsFromSeqIsNotTaken: from_seq on an update (one that
// would be refused on a create included) left the cursor where it was and
// answered 200 with nothing said, where herald register says so; the answer
// warns, and the cursor stays.
func TestAPIUpdateSaysItsFromSeqIsNotTaken(t *testing.T) {
	s := seedtest.SQLite(t)
	srv := apiServer(t, s, "")
	code, body := post(t, srv, "/v1/records", `{"stream": "orders", "records": [{"id": "a", "kind": "k", "payload": {}}, {"id": "b", "kind": "k", "payload": {}}]}`)
	require.Equal(t, http.StatusCreated, code, body)
	reg := func(extra string) (int, operator.RegisteredView) {
		code, body := post(t, srv, "/v1/registrations", `{"stream": "orders", "id": "r", "namespace": "webhook", "url": "https://ok.example/h"`+extra+`}`)
		var v operator.RegisteredView
		require.NoError(t, json.Unmarshal([]byte(body), &v), body)
		return code, v
	}
	code, v := reg(`, "from_seq": 2`)
	require.Equal(t, http.StatusCreated, code)
	require.Empty(t, v.Warnings)
	for _, from := range []string{"1", "999"} {
		code, v = reg(`, "from_seq": ` + from)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, uint64(2), v.NextSeq, "the cursor stays")
		require.Contains(t, v.Warnings, "from_seq "+from+" applies to a new registration only: the cursor stays at 2 (POST /v1/registration/skip or rewind on the admin address moves it)")
	}
	_, v = reg(`, "from_seq": 2`)
	require.Empty(t, v.Warnings, "the cursor it names: nothing to say")
}

// GET /v1/records/status without the record's name refuses naming the
// parameter it lacks (as strictQuery names an empty one): id, or seq
// beside a stream, or stream beside a seq.
func TestAPIRecordStatusRefusalNamesTheMissingParameter(t *testing.T) {
	srv := apiServer(t, memory.New(), "")
	for q, want := range map[string]string{
		"":                "invalid id: is required: name the record by id, or by stream and seq",
		"id=":             "invalid id: is empty: give it a value or leave it out",
		"stream=orders/1": "invalid seq: is required with stream: name the record by id, or by stream and seq",
		"seq=1":           "invalid stream: is required with seq: name the record by id, or by stream and seq",
		"id=evt-1&seq=1":  "invalid seq: is given with id: name the record by id, or by stream and seq, not both",
	} {
		code, body := call(t, srv, http.MethodGet, "/v1/records/status?"+q, "", "", "")
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", q, body)
		require.Equal(t, want, errorOf(t, body), q)
	}
}

// A JSON null is a JSON value: for a JSON content type it is a payload,
// stored as the 4 bytes sent, and appending it again is idempotent (as the
// journal and herald_append take it). For another type "payload" takes a
// JSON string, and null is none: refused naming the field, nothing written
// (an absent payload is the way to say no bytes).
func TestAPIJSONNullIsAPayloadOnlyForAJSONType(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "")
	nullRecord := `{"stream": "orders/1", "records": [{"id": "evt-n", "kind": "order.noted", "payload": null}]}`
	code, body := post(t, srv, "/v1/records", nullRecord)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = post(t, srv, "/v1/records", nullRecord)
	require.Equal(t, http.StatusOK, code, "the same null again: nothing new: %s", body)
	rec, err := s.Lookup(t.Context(), "evt-n")
	require.NoError(t, err)
	require.Equal(t, "null", string(rec.Payload))

	code, body = post(t, srv, "/v1/records", `{"stream": "orders/1", "records": [{"id": "evt-t", "kind": "order.noted", "content_type": "text/plain", "payload": null}]}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Equal(t, `invalid records[0].payload: is a JSON null, but content_type "text/plain" takes a JSON string (its text) or payload_base64 (its bytes)`, errorOf(t, body))
	head, err := s.Head(t.Context(), "orders/1")
	require.NoError(t, err)
	require.Equal(t, uint64(1), head, "nothing written by the refusal")
}
