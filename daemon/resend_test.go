package daemon

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/transport"
)

// resendDaemon runs a daemon on s that claims only when woken, with a
// webhook registration s/r of a loopback receiver (whose webhook-ids come
// on the channel returned) made past the two records of s: both count as
// acknowledged, none was sent.
func resendDaemon(t *testing.T, s store.Backend) (running, <-chan string) {
	t.Helper()
	got := make(chan string, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Webhook-Id")
	}))
	t.Cleanup(recv.Close)
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second})
	require.NoError(t, err)
	d := start(t, Options{Store: s, Transport: tr, Projections: []push.Projection{webhook.New()}, APIAddr: "127.0.0.1:0",
		Every: time.Hour}) // only a wake makes the worker claim
	api := "http://" + d.Addrs.API
	code, body := postTo(t, api+"/v1/records", `{"stream": "s", "records": [{"id": "e1", "kind": "k", "payload": {}}, {"id": "e2", "kind": "k", "payload": {}}]}`, nil, nil)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = postTo(t, api+"/v1/registrations", `{"stream": "s", "id": "r", "namespace": "webhook", "url": "`+recv.URL+`", "from_seq": 3,
		"config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`, nil, nil)
	require.Equal(t, http.StatusCreated, code, body)
	return d, got
}

// next is the next webhook-id the receiver got.
func next(t *testing.T, d running, got <-chan string) string {
	t.Helper()
	select {
	case id := <-got:
		return id
	case <-d.stopped:
		t.Fatalf("the daemon stopped: %v", *d.runErr)
	case <-time.After(30 * time.Second): // a network timeout, not synchronisation
		t.Fatal("no delivery within 30 s")
	}
	return ""
}

// POST /v1/registration/resend queues an acknowledged record and wakes the
// worker, which sends it once with its original id; the cursor stays and
// the answer is on record. What cannot be resent is a 400 naming seq, or a
// 404, and queues nothing.
func TestAPIResendWakesTheWorkerAndSendsOnce(t *testing.T) {
	s := seedtest.SQLite(t)
	d, got := resendDaemon(t, s)
	api := "http://" + d.Addrs.API
	code, body := postTo(t, api+"/v1/registrations", `{"stream": "s", "id": "others", "namespace": "webhook", "url": "https://hooks.example/x",
		"from_seq": 3, "kinds": ["other.*"], "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`, nil, nil)
	require.Equal(t, http.StatusCreated, code, body)
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"stream=s&id=others&seq=1", http.StatusBadRequest, `"invalid seq: #1 is a record of kind k, which this registration does not want (its kinds: other.*)`},
		{"stream=s&id=r&seq=3", http.StatusBadRequest, `"invalid seq: #3 is at or past the cursor (3)`},
		{"stream=s&id=r&seq=0", http.StatusBadRequest, `invalid seq`},
		{"stream=s&id=r", http.StatusBadRequest, `seq are required`},
		{"stream=s&id=nobody&seq=1", http.StatusNotFound, `registration stream=s id=nobody`},
	} {
		code, body := postTo(t, api+"/v1/registration/resend?"+tc.query, "", nil, nil)
		require.Equal(t, tc.code, code, "%s: %s", tc.query, body)
		require.Contains(t, body, tc.want, tc.query)
	}
	code, body = postTo(t, api+"/v1/registration/resend?stream=s&id=r&seq=1&by=alice", "", nil, nil)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Contains(t, body, `"seq": 1`)
	require.Contains(t, body, `"queued": true`)
	require.Equal(t, "e1", next(t, d, got), "resent with its original id")

	code, body = postTo(t, api+"/v1/registration/resend?stream=s&id=r&seq=2&by=bob", "", nil, nil)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, "e2", next(t, d, got))
	st, err := s.Get(t.Context(), "s", "r")
	require.NoError(t, err)
	require.Equal(t, uint64(3), st.NextSeq, "the cursor never moved")
}

// A resend asked outside the daemon (herald resend, another process) on
// PostgreSQL wakes it as an append does: its herald.registration.resend
// event is numbered by a sequencer, whose step wakes the workers.
func TestResendOutsideTheDaemonWakesItOnPostgres(t *testing.T) {
	s := pgtest.NewStore(t)
	d, got := resendDaemon(t, s)
	require.NoError(t, errOf(s.Resend(t.Context(), "s", "r", 2, time.Now(), "alice")))
	require.Equal(t, "e2", next(t, d, got))
}

// errOf is a resend's error, its queued dropped.
func errOf(_ bool, err error) error { return err }
