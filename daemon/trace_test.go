package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

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
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Bad trace context, in a header or a record, is a 400 naming it, and
// nothing is appended.
func TestAPIRefusesBadTraceContext(t *testing.T) {
	s := memory.New()
	srv := apiServer(t, s, "", 0)
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
	srv := apiServer(t, s, "", 0)
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

	recs, err := s.Read(t.Context(), "orders/1", 1, 10)
	require.NoError(t, err)
	require.Equal(t, testTraceparent, recs[0].Traceparent)
	require.Equal(t, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", recs[0].Tracestate)
	require.Equal(t, own, recs[1].Traceparent)

	code, out = postTraced(t, srv.URL, body, []string{own}, nil)
	require.Equal(t, http.StatusOK, code, "trace context is not content: the same records: %s", out)
	recs, err = s.Read(t.Context(), "orders/1", 1, 10)
	require.NoError(t, err)
	require.Equal(t, testTraceparent, recs[0].Traceparent, "the stored trace context is kept")
}

// The idempotent 200 answers each record as stored, with the trace context
// of its first append, as the 201 did: on every store.
func TestAPIRepeatedAppendAnswersTheStoredTraceContext(t *testing.T) {
	sq, pg := sqliteStore(t), pgtest.NewStore(t)
	const other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	body := `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "k", "payload": {}}]}`
	for name, s := range map[string]Store{"memory": memory.New(), "sqlite": sq, "postgres": pg} {
		srv := apiServer(t, s, "", 0)
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

	s := sqliteStore(t)
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
