package transport_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// h2Peer is a receiver that speaks HTTP/2 frame by frame (TLS, ALPN h2),
// so that it can misbehave as net/http's server never does: it reads each
// request to its end, then answer writes whatever frames it likes on the
// request's stream. It sends no WINDOW_UPDATE, ever.
type h2Peer struct {
	url  string
	opts transport.Options // trusting the peer's certificate
}

// newH2Peer starts an h2Peer with HTTP/2's default settings; answer runs
// on the connection's reading goroutine (nil: never answers).
func newH2Peer(t *testing.T, answer func(fr *http2.Framer, stream uint32, conn net.Conn)) *h2Peer {
	t.Helper()
	ca := keytest.NewCA(t)
	config := ca.RequireClients(t)
	config.ClientAuth, config.NextProtos = tls.NoClientCert, []string{"h2"}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", config)
	if err != nil {
		t.Fatal(err)
	}
	p := &h2Peer{url: "https://" + ln.Addr().String() + "/hook", opts: loopbackOptions()}
	p.opts.TLSConfig = &tls.Config{RootCAs: ca.Pool}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	var open sync.Map
	t.Cleanup(func() { open.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true }) })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			open.Store(conn, nil)
			wg.Go(func() {
				defer conn.Close()
				serveH2(t, conn.(*tls.Conn), answer)
			})
		}
	})
	return p
}

func serveH2(t *testing.T, conn *tls.Conn, answer func(*http2.Framer, uint32, net.Conn)) {
	if err := conn.Handshake(); err != nil {
		return
	}
	if proto := conn.ConnectionState().NegotiatedProtocol; proto != "h2" {
		t.Errorf("ALPN: herald negotiated %q, want h2 offered by the receiver", proto)
		return
	}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil { // herald gave up before it began
		return
	}
	if string(preface) != http2.ClientPreface {
		t.Errorf("client preface %q, want HTTP/2's", preface)
		return
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		return
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame, *http2.DataFrame:
			if h := f.Header(); h.Flags.Has(http2.FlagHeadersEndStream) && answer != nil { // the same bit in DATA
				answer(fr, h.StreamID, conn)
			}
		}
	}
}

// block is an HPACK header block of name, value pairs, written as given:
// no encoder check stands between a hostile peer and its bytes.
func block(fields ...string) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return buf.Bytes()
}

func headers(fr *http2.Framer, stream uint32, end bool, fields ...string) {
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block(fields...), EndHeaders: true, EndStream: end})
}

// seen is a request as a receiver read it.
type seen struct {
	proto  int
	header http.Header
	body   string
}

// A receiver offering h2 gets HTTP/2 (herald's client negotiates it by
// ALPN), and a webhook message reaches it with the same headers and body as
// over HTTP/1.1: its 2xx is Accepted.
func TestH2ReceiverGetsTheSameWebhookAsHTTP1(t *testing.T) {
	rec := journal.Record{Stream: "task/8f3c", Seq: 7, ID: "evt-7", Kind: "task.done", ContentType: "application/json", Payload: []byte(`{"n":7}`)}
	get := func(t *testing.T, h2 bool) (seen, push.Outcome) {
		got := make(chan seen, 1)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got <- seen{r.ProtoMajor, r.Header.Clone(), string(body)}
			w.WriteHeader(http.StatusAccepted)
		}))
		srv.EnableHTTP2 = h2
		srv.StartTLS()
		t.Cleanup(srv.Close)
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		opts := loopbackOptions()
		opts.TLSConfig = &tls.Config{RootCAs: roots}
		reg := registration(srv.URL + "/hook")
		reg.Config = push.Config(`{"secrets":["` + webhook.NewSecret() + `"],"headers":{"X-Tenant":"acme"}}`)
		msgs, err := webhook.New().Messages(t.Context(), rec, reg)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("webhook messages: %v, %v", msgs, err)
		}
		out, err := newTransport(t, opts).Deliver(t.Context(), reg, msgs[0], at)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			return s, out
		default:
			t.Fatalf("the receiver got nothing: %s", describe(out))
			return seen{}, out
		}
	}
	one, out1 := get(t, false)
	two, out2 := get(t, true)
	if one.proto != 1 || two.proto != 2 {
		t.Fatalf("protocols: HTTP/%d and HTTP/%d, want HTTP/1 and, to a receiver offering h2, HTTP/2", one.proto, two.proto)
	}
	for _, out := range []push.Outcome{out1, out2} {
		if out.Verdict != push.Accepted || out.Status != http.StatusAccepted {
			t.Errorf("got %s, want accepted 202", describe(out))
		}
	}
	if one.body != two.body || one.body != `{"n":7}` {
		t.Errorf("bodies: HTTP/1.1 %q, HTTP/2 %q, want both the record's payload", one.body, two.body)
	}
	// The signature covers the secret (a new one each) and the body; the
	// rest must match field for field.
	for _, h := range []http.Header{one.header, two.header} {
		if sig := h.Get("Webhook-Signature"); !strings.HasPrefix(sig, "v1,") {
			t.Errorf("Webhook-Signature = %q, want a v1 signature", sig)
		}
		h.Del("Webhook-Signature")
	}
	if a, b := fmt.Sprint(one.header), fmt.Sprint(two.header); a != b {
		t.Errorf("headers differ:\nHTTP/1.1 %s\nHTTP/2   %s", a, b)
	}
	if one.header.Get("Webhook-Id") == "" || one.header.Get("X-Tenant") != "acme" || one.header.Get("Herald-Seq") != "7" {
		t.Errorf("headers %v: want the webhook's own, the registration's and herald's", one.header)
	}
}

// An HTTP/2 receiver that answers on the request's stream in a way that is
// no valid answer has answered (its frames came back on a connection that
// serves other streams): the failure is the registration's, as over
// HTTP/1.1, its reason quoting what the receiver sent, cut. One that sends
// GOAWAY and closes has dropped the connection: the host's. A status
// decides before its body is cut, as over HTTP/1.1.
func TestMalformedH2AnswersAreClassifiedAsOverHTTP1(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, c := range []struct {
		name      string
		answer    func(fr *http2.Framer, stream uint32, conn net.Conn)
		verdict   push.Verdict
		status    int
		hostLevel bool
		reason    string
		body      string
	}{
		{name: "invalid header field name, hostile and long",
			answer: func(fr *http2.Framer, id uint32, _ net.Conn) {
				headers(fr, id, true, ":status", "200", "X-Bad\x1b]0;"+long, "v")
			},
			verdict: push.Transient,
			reason:  `answer not valid HTTP/2: invalid header field name ` + journal.Quoted("X-Bad\x1b]0;"+long)},
		{name: "invalid header field value",
			answer: func(fr *http2.Framer, id uint32, _ net.Conn) {
				headers(fr, id, true, ":status", "200", "x-bad", "v\x00\r\nInjected: 1")
			},
			verdict: push.Transient,
			reason:  `answer not valid HTTP/2: invalid header field value for "x-bad"`},
		{name: ":status not a number",
			answer:  func(fr *http2.Framer, id uint32, _ net.Conn) { headers(fr, id, true, ":status", "2OO") },
			verdict: push.Transient,
			reason:  "answer not valid HTTP/2: malformed response from server: malformed non-numeric status pseudo header"},
		{name: "RST_STREAM before any answer",
			answer:  func(fr *http2.Framer, id uint32, _ net.Conn) { _ = fr.WriteRSTStream(id, http2.ErrCodeInternal) },
			verdict: push.Transient,
			reason:  "stream reset by the receiver (HTTP/2 INTERNAL_ERROR) waiting for the response headers"},
		{name: "GOAWAY after the request, then close",
			answer: func(fr *http2.Framer, id uint32, conn net.Conn) {
				_ = fr.WriteGoAway(id, http2.ErrCodeNo, []byte("bye \x1b[31m"+long))
				conn.Close()
			},
			verdict: push.Transient, hostLevel: true,
			reason: "http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=" + journal.Quoted("bye \x1b[31m"+long)},
		{name: "500, DATA, then RST_STREAM: the body is cut",
			answer: func(fr *http2.Framer, id uint32, _ net.Conn) {
				headers(fr, id, false, ":status", "500")
				_ = fr.WriteData(id, false, []byte("partial"))
				_ = fr.WriteRSTStream(id, http2.ErrCodeInternal)
			},
			verdict: push.Transient, status: 500, body: "partial",
			reason: "500 Internal Server Error; body cut: stream error: stream ID 1; INTERNAL_ERROR; received from peer"},
		{name: "200, DATA, then RST_STREAM: the status decides",
			answer: func(fr *http2.Framer, id uint32, _ net.Conn) {
				headers(fr, id, false, ":status", "200")
				_ = fr.WriteData(id, false, []byte("partial"))
				_ = fr.WriteRSTStream(id, http2.ErrCodeInternal)
			},
			verdict: push.Accepted, status: 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newH2Peer(t, c.answer)
			out := deliver(t, newTransport(t, p.opts), p.url, message("{}"))
			if out.Verdict != c.verdict || out.Status != c.status || out.HostLevel != c.hostLevel || out.Reason != c.reason || string(out.Body) != c.body {
				t.Fatalf("got %s host-level=%t body=%q\nwant %v status=%d host-level=%t reason=%q body=%q",
					describe(out), out.HostLevel, out.Body, c.verdict, c.status, c.hostLevel, c.reason, c.body)
			}
			if want := !c.hostLevel; out.HostAnswered() != want {
				t.Errorf("HostAnswered() = %t, want %t", out.HostAnswered(), want)
			}
		})
	}
}

// HTTP/2 receivers that never answer are bounded by herald's timeout and
// are the host's failure: one refusing every stream (net/http retries
// REFUSED_STREAM within the attempt), one that sends GOAWAY before reading
// the request (it is retried on a new connection), one that never opens
// its flow-control window to a 1 MiB body.
func TestSilentH2ReceiversTimeOutAsTheHosts(t *testing.T) {
	const timeout = 300 * time.Millisecond
	big := strings.Repeat("y", 1<<20)
	for _, c := range []struct {
		name, body, reason string
		answer             func(fr *http2.Framer, stream uint32, conn net.Conn)
	}{
		{"RST_STREAM REFUSED_STREAM to every request", "{}", "timeout: no answer within 300ms",
			func(fr *http2.Framer, id uint32, _ net.Conn) { _ = fr.WriteRSTStream(id, http2.ErrCodeRefusedStream) }},
		{"GOAWAY refusing every request, then close", "{}", "timeout: no answer within 300ms",
			func(fr *http2.Framer, _ uint32, conn net.Conn) {
				_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
				conn.Close()
			}},
		{"no WINDOW_UPDATE to a 1 MiB body", big, "timeout: no answer within 300ms (while sending the request)", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newH2Peer(t, c.answer)
			p.opts.Timeout = timeout
			out := deliver(t, newTransport(t, p.opts), p.url, message(c.body))
			wantNoAnswer(t, out)
			if !strings.HasPrefix(out.Reason, c.reason) {
				t.Errorf("Reason = %q, want it to begin %q", out.Reason, c.reason)
			}
			if out.Duration < timeout || out.Duration > timeout+2*time.Second {
				t.Errorf("Duration = %v, want the %v timeout (plus scheduling)", out.Duration, timeout)
			}
		})
	}
}

// A secret herald sent that the receiver echoes where a quoted value is cut
// (here a GOAWAY's debug data, past 256 bytes) is redacted before the cut:
// no part of it is left in the reason.
func TestASecretEchoedAcrossTheCutIsRedactedWhole(t *testing.T) {
	const token = "tok-0123456789abcdef0123456789"
	debug := strings.Repeat("x", 250) + token + strings.Repeat("y", 100)
	p := newH2Peer(t, func(fr *http2.Framer, id uint32, conn net.Conn) {
		_ = fr.WriteGoAway(id, http2.ErrCodeNo, []byte(debug))
		conn.Close()
	})
	msg := message("{}")
	msg.Header = http.Header{"Authorization": {"Bearer " + token}}
	out := deliver(t, newTransport(t, p.opts), p.url, msg)
	if !strings.Contains(out.Reason, "[redac") {
		t.Fatalf("Reason = %q: want the token redacted before the cut", out.Reason)
	}
	if strings.Contains(out.Reason, token[:4]) {
		t.Errorf("Reason = %q keeps the token's first bytes", out.Reason)
	}
}

// Every client herald builds asks for HTTP/2 by ALPN: the default one, a
// registration's with its client certificate, through its own proxy, and
// through the daemon's egress proxy.
func TestEveryRouteNegotiatesH2WithAReceiverOfferingIt(t *testing.T) {
	ca := keytest.NewCA(t)
	protos := make(chan string, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := "anonymous"
		if len(r.TLS.PeerCertificates) > 0 {
			who = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		protos <- fmt.Sprintf("%s %s", r.Proto, who)
	}))
	srv.TLS = ca.RequireClients(t)
	srv.TLS.ClientAuth = tls.VerifyClientCertIfGiven
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	opts := transport.Options{AllowPrivateNetwork: true, Timeout: 5 * time.Second, TLSConfig: &tls.Config{RootCAs: ca.Pool}}
	egress, own := newConnectProxy(t, ""), newConnectProxy(t, "")
	viaEgress := opts
	viaEgress.Proxy = egress.url()
	// The tunnels end when the connections do; an HTTP/2 one may not yet be
	// idle when a test's CloseIdleConnections runs (its stream is
	// forgotten asynchronously), so the server ends them, before the
	// proxies wait for their tunnels.
	t.Cleanup(srv.CloseClientConnections)
	for _, c := range []struct {
		name string
		opts transport.Options
		e    transport.Endpoint
		via  *connectProxy
		want string
	}{
		{"default", opts, transport.Endpoint{}, nil, "HTTP/2.0 anonymous"},
		{"client certificate", opts, clientCert(t, ca, "tenant-42"), nil, "HTTP/2.0 tenant-42"},
		{"registration's proxy", opts, transport.Endpoint{Proxy: own.url()}, own, "HTTP/2.0 anonymous"},
		{"egress proxy", viaEgress, transport.Endpoint{}, egress, "HTTP/2.0 anonymous"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := newTransport(t, c.opts).Deliver(t.Context(), withEndpoint(t, srv.URL, c.e), message("{}"), at)
			if err != nil || !out.OK() {
				t.Fatalf("got %s, %v; want accepted", describe(out), err)
			}
			if got := <-protos; got != c.want {
				t.Errorf("the receiver saw %q, want %q", got, c.want)
			}
			if c.via == nil {
				return
			}
			if targets, _ := c.via.seen(); len(targets) != 1 {
				t.Errorf("the proxy tunnelled to %q, want the receiver once", targets)
			}
		})
	}
}
