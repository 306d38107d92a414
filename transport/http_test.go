package transport_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldpush/herald"
	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/transport"
)

// corpusDir is the corpus input (internal/corpustest): testdata/corpus, or
// the shared corpus, read where it lies, when HERALD_CORPUS names it.
func corpusDir(t *testing.T) string {
	t.Helper()
	return corpustest.Dir(t, "")
}

// The request on the wire: POST, the body byte for byte (real GitHub
// webhook payloads from the corpus), the message's Content-Type and
// headers, and herald's User-Agent, which a message cannot override.
func TestRequestCarriesTheMessage(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir(t), "github", "*", "*.json"))
	if err != nil || len(files) < 4 {
		t.Fatalf("want the github payloads of the corpus, found %d (%v)", len(files), err)
	}
	files = files[:min(10, len(files))]
	type seen struct {
		method, contentType, userAgent, custom string
		body                                   []byte
	}
	got := make(chan seen, 1)
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), r.Header.Get("X-Custom"), body}
		w.WriteHeader(http.StatusAccepted)
	})
	tr := newTransport(t, loopbackOptions())
	for _, f := range files {
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msg := push.Message{ID: filepath.Base(f), ContentType: "application/json", Body: payload, Header: http.Header{
			"X-Custom":     {"kept"},
			"Content-Type": {"text/plain"},   // the message's ContentType wins
			"User-Agent":   {"not-herald/1"}, // the transport sets it
		}}
		if out := deliver(t, tr, srv.URL+"/hook", msg); out.Verdict != push.Accepted || out.Status != 202 {
			t.Fatalf("%s: got %s", f, describe(out))
		}
		s := <-got
		if s.method != http.MethodPost || s.contentType != "application/json" || s.custom != "kept" ||
			s.userAgent != "herald/"+herald.Version || !bytes.Equal(s.body, payload) {
			t.Fatalf("%s: server saw %s %q ua=%q custom=%q body equal=%t", f, s.method, s.contentType, s.userAgent, s.custom, bytes.Equal(s.body, payload))
		}
	}
}

// hmacSigner signs like the projections do: with a key and the caller's
// instant, on the final request.
type hmacSigner struct {
	key   []byte
	mu    sync.Mutex
	calls []time.Time
	err   error
}

func (s *hmacSigner) Sign(req *http.Request, body []byte, at time.Time) error {
	s.mu.Lock()
	s.calls = append(s.calls, at)
	s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if req.Header.Get("User-Agent") != "herald/"+herald.Version || req.Header.Get("Content-Type") == "" {
		return errors.New("signed before the request was final")
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	req.Header.Set("X-Signed-At", ts)
	req.Header.Set("Signature", "v1,"+s.mac(ts, body))
	return nil
}

func (s *hmacSigner) mac(ts string, body []byte) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func (s *hmacSigner) String() string { return "hmacSigner{key redacted}" }

// The signer runs on every attempt with the caller's at, after the
// transport's own headers, and its headers reach the server.
func TestSignerGetsAtOnEveryAttempt(t *testing.T) {
	signer := &hmacSigner{key: []byte("k-0123456789abcdef")}
	type seen struct{ signedAt, signature string }
	got := make(chan seen, 2)
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		want := "v1," + signer.mac(r.Header.Get("X-Signed-At"), body)
		if r.Header.Get("Signature") != want {
			t.Errorf("server: signature does not verify over the body it received")
		}
		got <- seen{r.Header.Get("X-Signed-At"), r.Header.Get("Signature")}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tr := newTransport(t, loopbackOptions())
	msg := message(`{"task":"8f3c"}`)
	msg.Signer = signer
	instants := []time.Time{at, at.Add(37 * time.Second)}
	for _, when := range instants {
		out, err := tr.Deliver(context.Background(), registration(srv.URL+"/hook"), msg, when)
		if err != nil || out.Verdict != push.Transient {
			t.Fatalf("Deliver at %v: %s, %v", when, describe(out), err)
		}
		if s := <-got; s.signedAt != strconv.FormatInt(when.Unix(), 10) {
			t.Errorf("server saw X-Signed-At %s, want %d (the caller's at)", s.signedAt, when.Unix())
		}
	}
	signer.mu.Lock()
	defer signer.mu.Unlock()
	if len(signer.calls) != 2 || !signer.calls[0].Equal(instants[0]) || !signer.calls[1].Equal(instants[1]) {
		t.Errorf("signer called with %v, want %v", signer.calls, instants)
	}
}

// A signer that fails is herald's fault: Transient, nothing sent.
func TestSignerFailureIsTransient(t *testing.T) {
	srv := newCounter(t, nil)
	msg := message("{}")
	msg.Signer = &hmacSigner{key: []byte("k-0123456789abcdef"), err: errors.New("key not loaded")}
	out := deliver(t, newTransport(t, loopbackOptions()), srv.URL+"/hook", msg)
	if out.Verdict != push.Transient || out.Reason != "sign: key not loaded" || out.Status != 0 || out.HostLevel {
		t.Fatalf("got %s (host-level %t), want transient \"sign: key not loaded\", herald's fault, not the host's", describe(out), out.HostLevel)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server got %d requests, want 0", n)
	}
}

// A request Go's client refuses before it asks for a connection (a header
// value with a line break, which a projection should never make) is herald's
// fault: Transient, not HostLevel, nothing sent, so the receiver's host is
// not charged for it.
func TestRequestRefusedBeforeConnectingIsNotTheHosts(t *testing.T) {
	srv := newCounter(t, nil)
	msg := message("{}")
	msg.Header = http.Header{"X-Kind": {"order\r\nX-Injected: 1"}}
	out := deliver(t, newTransport(t, loopbackOptions()), srv.URL+"/hook", msg)
	if out.Verdict != push.Transient || out.HostLevel || out.Status != 0 || !strings.HasPrefix(out.Reason, "request not sent: ") {
		t.Fatalf("got %s (host-level %t), want transient \"request not sent: …\", herald's fault, not the host's", describe(out), out.HostLevel)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server got %d requests, want 0", n)
	}
}

// NewRequest builds the request Deliver sends: the receiver gets the same
// method, URL path, body and every header NewRequest set, signature
// included. A URL the guard refuses, or a failing signer, is an error.
func TestNewRequestIsWhatDeliverSends(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.WriteHeader(http.StatusNoContent)
	})
	tr := newTransport(t, loopbackOptions())
	msg := message(`{"task":"8f3c"}`)
	msg.Header = http.Header{"X-Trace": {"a", "b"}}
	msg.Signer = &hmacSigner{key: []byte("k-0123456789abcdef")}
	reg := registration(srv.URL + "/hook?x=1")

	req, err := tr.NewRequest(context.Background(), reg, msg, at)
	if err != nil {
		t.Fatal(err)
	}
	if out := deliver(t, tr, reg.URL, msg); !out.OK() {
		t.Fatalf("Deliver: %s", describe(out))
	}
	sent, body := <-got, <-bodies
	if req.Method != sent.Method || req.URL.RequestURI() != sent.URL.RequestURI() {
		t.Errorf("NewRequest %s %s, sent %s %s", req.Method, req.URL.RequestURI(), sent.Method, sent.URL.RequestURI())
	}
	built, _ := io.ReadAll(req.Body)
	if !bytes.Equal(built, body) || !bytes.Equal(body, msg.Body) {
		t.Errorf("body built %q, sent %q, want %q", built, body, msg.Body)
	}
	if len(req.Header) < 5 { // Content-Type, User-Agent, X-Trace, X-Signed-At, Signature
		t.Fatalf("NewRequest set only %v", req.Header)
	}
	for k, vs := range req.Header {
		if !slices.Equal(sent.Header[k], vs) {
			t.Errorf("header %s: NewRequest %q, sent %q", k, vs, sent.Header[k])
		}
	}

	if _, err := newTransport(t, transport.Options{}).NewRequest(context.Background(), reg, msg, at); !errors.As(err, new(*transport.RefusedError)) {
		t.Errorf("http:// on loopback under the default options: %v, want a *RefusedError", err)
	}
	msg.Signer = &hmacSigner{key: []byte("k-0123456789abcdef"), err: errors.New("key not loaded")}
	if _, err := tr.NewRequest(context.Background(), reg, msg, at); err == nil || err.Error() != "transport: sign: key not loaded" {
		t.Errorf("failing signer: %v, want \"transport: sign: key not loaded\"", err)
	}
}

// A receiver that never answers costs one timeout, no more, and says so.
func TestReceiverThatNeverAnswersTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	t.Cleanup(func() { close(release) }) // runs before srv.Close, which waits for the handler
	opts := loopbackOptions()
	opts.Timeout = 200 * time.Millisecond
	out := deliver(t, newTransport(t, opts), srv.URL+"/hook", message("{}"))
	wantNoAnswer(t, out)
	if out.Reason != "timeout: no answer within 200ms (waiting for the response headers)" {
		t.Errorf("Reason = %q", out.Reason)
	}
	if out.Duration < 200*time.Millisecond || out.Duration > 200*time.Millisecond+2*time.Second {
		t.Errorf("Duration = %v, want the 200ms timeout (plus scheduling)", out.Duration)
	}
}

// A receiver that sends its status and then stalls: the status decides the
// verdict, the timeout cuts the body.
func TestTimeoutWhileReadingBody(t *testing.T) {
	release := make(chan struct{})
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(status)
		io.WriteString(w, "partial answer")
		http.NewResponseController(w).Flush()
		<-release
	})
	t.Cleanup(func() { close(release) })
	opts := loopbackOptions()
	opts.Timeout = 200 * time.Millisecond
	tr := newTransport(t, opts)

	out := deliver(t, tr, srv.URL+"/hook?status=503", message("{}"))
	if out.Verdict != push.Transient || out.Status != 503 || string(out.Body) != "partial answer" {
		t.Fatalf("got %s body=%q", describe(out), out.Body)
	}
	mustContain(t, "Reason", out.Reason, "503 Service Unavailable; body cut: timeout after 200ms")

	out = deliver(t, tr, srv.URL+"/hook?status=200", message("{}"))
	if out.Verdict != push.Accepted || out.Status != 200 || out.Reason != "" {
		t.Fatalf("a 2xx whose body stalls: got %s, want accepted", describe(out))
	}
}

// A 10 MB answer is cut to the evidence cap and drained, so the next
// request reuses the connection.
func TestLargeBodyIsCutAndConnectionReused(t *testing.T) {
	const size = 10 << 20
	big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(big)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr := newTransport(t, loopbackOptions())

	out := deliver(t, tr, srv.URL+"/big", message("{}"))
	if out.Verdict != push.Transient || out.Status != 500 || !bytes.Equal(out.Body, big[:store.MaxEvidenceBody]) {
		t.Fatalf("got %s, body %d bytes; want transient 500 with the first %d bytes", describe(out), len(out.Body), store.MaxEvidenceBody)
	}
	var reused atomic.Bool
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused.Store(info.Reused) },
	})
	out, err := tr.Deliver(ctx, registration(srv.URL+"/small"), message("{}"), at)
	if err != nil || out.Verdict != push.Accepted {
		t.Fatalf("second request: %s, %v", describe(out), err)
	}
	if !reused.Load() || conns.Load() != 1 {
		t.Fatalf("second request: reused=%t, server saw %d connections; want the first one reused", reused.Load(), conns.Load())
	}
}

// An endless answer is cut after MaxResponseBody + MaxDrain bytes, not at
// the timeout, and its connection is closed rather than reused.
func TestEndlessBodyIsCut(t *testing.T) {
	var conns atomic.Int64
	done := make(chan int64, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/endless" {
			return
		}
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		var sent int64
		for {
			n, err := w.Write(chunk)
			sent += int64(n)
			if err != nil {
				done <- sent
				return
			}
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	opts := loopbackOptions()
	opts.Timeout = 20 * time.Second
	tr := newTransport(t, opts)

	out := deliver(t, tr, srv.URL+"/endless", message("{}"))
	if out.Verdict != push.Accepted || len(out.Body) != 0 {
		t.Fatalf("got %s, body %d bytes", describe(out), len(out.Body))
	}
	if out.Duration >= opts.Timeout {
		t.Fatalf("Duration = %v: the body was cut by the timeout, not by the byte cap", out.Duration)
	}
	select {
	case sent := <-done:
		if sent < transport.MaxResponseBody+transport.MaxDrain {
			t.Errorf("server wrote %d bytes before the connection closed, want at least %d read", sent, transport.MaxResponseBody+transport.MaxDrain)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the endless answer's connection was never closed")
	}
	if out := deliver(t, tr, srv.URL+"/small", message("{}")); out.Verdict != push.Accepted {
		t.Fatalf("next request: %s", describe(out))
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2 (the cut one is not reused)", n)
	}
}

// When the caller's context ends (shutdown), the attempt says nothing about
// the receiver: Deliver returns an error, not an Outcome.
func TestCallerContextEndedIsAnError(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	})
	t.Cleanup(func() { close(release) })
	tr := newTransport(t, loopbackOptions())

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	out, err := tr.Deliver(ctx, registration(srv.URL+"/hook"), message("{}"), at)
	if !errors.Is(err, context.Canceled) || out.Verdict != 0 {
		t.Fatalf("cancelled in flight: got %s, %v; want an error wrapping context.Canceled", describe(out), err)
	}

	out, err = tr.Deliver(ctx, registration(srv.URL+"/hook"), message("{}"), at)
	if !errors.Is(err, context.Canceled) || out.Verdict != 0 {
		t.Fatalf("cancelled before: got %s, %v", describe(out), err)
	}
	if n := srv.hits.Load(); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

// HTTPS, the default: a receiver with a certificate the roots trust is
// reached; one they do not trust is a Transient failure.
func TestHTTPS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Error("request arrived without TLS")
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	opts := transport.Options{AllowPrivateNetwork: true, TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()}
	opts.TLSConfig.RootCAs = roots
	if out := deliver(t, newTransport(t, opts), srv.URL+"/hook", message("{}")); out.Verdict != push.Accepted {
		t.Fatalf("trusted certificate: got %s", describe(out))
	}
	out := deliver(t, newTransport(t, transport.Options{AllowPrivateNetwork: true}), srv.URL+"/hook", message("{}"))
	if out.Verdict != push.Transient || !strings.Contains(out.Reason, "certificate") {
		t.Fatalf("untrusted certificate: got %s, want transient naming the certificate", describe(out))
	}
}

func TestOptionsValidation(t *testing.T) {
	_, err := transport.New(transport.Options{
		Timeout:             -time.Second,
		MaxIdleConnsPerHost: -1,
		AllowHosts:          []string{"ok.example", "https://hooks.example/x", "*"},
	})
	if !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("New(bad options) = %v, want an error wrapping journal.ErrInvalid", err)
	}
	for _, want := range []string{"Options.Timeout", "Options.MaxIdleConnsPerHost", "AllowHosts[1]", "AllowHosts[2]"} {
		mustContain(t, "error", err.Error(), want)
	}
	if strings.Contains(err.Error(), "AllowHosts[0]") {
		t.Errorf("error %q blames a good pattern", err)
	}
	for _, bad := range []transport.Options{{Timeout: time.Hour}, {MaxIdleConnsPerHost: 5000}} {
		if _, err := transport.New(bad); err == nil {
			t.Errorf("New(%v) accepted", bad)
		}
	}
	tr, err := transport.New(transport.Options{})
	if err != nil {
		t.Fatalf("New(zero Options) = %v", err)
	}
	mustContain(t, "String", tr.String(), "Timeout: 15s, AllowHTTP: false, AllowPrivateNetwork: false")
}
