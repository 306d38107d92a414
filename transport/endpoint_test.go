package transport_test

import (
	"bufio"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// withEndpoint is registration(url) whose config holds e.
func withEndpoint(t *testing.T, url string, e transport.Endpoint) push.Registration {
	t.Helper()
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	reg := registration(url)
	reg.Config = raw
	return reg
}

func TestRegistrationHeadersArriveAtTheReceiver(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := newCounter(t, func(_ http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() })
	tr := newTransport(t, loopbackOptions())
	reg := withEndpoint(t, srv.URL, transport.Endpoint{Headers: map[string]string{"x-tenant": "42", "X-Api-Key": "k3y with\tspace"}})
	msg := message(`{}`)
	msg.Header = http.Header{"Herald-Kind": {"order.paid"}}
	out, err := tr.Deliver(context.Background(), reg, msg, at)
	if err != nil || !out.OK() {
		t.Fatalf("Deliver = %s, %v; want accepted", describe(out), err)
	}
	h := <-got
	for name, want := range map[string]string{"X-Tenant": "42", "X-Api-Key": "k3y with\tspace", "Herald-Kind": "order.paid", "Content-Type": "application/json"} {
		if v := h.Values(name); len(v) != 1 || v[0] != want {
			t.Errorf("receiver got %s %q, want exactly %q", name, v, want)
		}
	}
}

func TestEndpointRefusesReservedAndMalformedHeaders(t *testing.T) {
	projectionSets := []string{"Webhook-Signature", "Ce-*"} // as a projection passes its own
	long := "X-" + strings.Repeat("a", transport.MaxHeaderNameBytes)
	for _, c := range []struct{ name, value, field, want string }{
		{"Connection", "close", "config.headers[Connection]", "hop-by-hop"},
		{"keep-alive", "1", "config.headers[keep-alive]", "Keep-Alive"},
		{"Proxy-Authorization", "x", "config.headers[Proxy-Authorization]", "Proxy-*"},
		{"TE", "trailers", "config.headers[TE]", "Te"},
		{"Trailer", "x", "config.headers[Trailer]", "Trailer"},
		{"Transfer-Encoding", "chunked", "config.headers[Transfer-Encoding]", "Transfer-Encoding"},
		{"Upgrade", "h2c", "config.headers[Upgrade]", "Upgrade"},
		{"Host", "evil.example", "config.headers[Host]", "Host"},
		{"Content-Length", "0", "config.headers[Content-Length]", "Content-Length"},
		{"content-type", "text/plain", "config.headers[content-type]", "Content-Type"},
		{"Traceparent", "00-x", "config.headers[Traceparent]", "Traceparent"},
		{"Herald-Seq", "9", "config.headers[Herald-Seq]", "Herald-*"},
		{"webhook-signature", "v1,x", "config.headers[webhook-signature]", "Webhook-Signature"},
		{"ce-id", "1", "config.headers[ce-id]", "Ce-*"},
		{"X-Ok", "a\r\nX-Injected: 1", "config.headers[X-Ok]", "CR, LF"},
		{"X-Ok", "a\nb", "config.headers[X-Ok]", "CR, LF"},
		{"X-Ok", "caf\u00e9", "config.headers[X-Ok]", "non-ASCII"},
		{"X-Ok", " padded", "config.headers[X-Ok]", "starts or ends with a space"},
		{"X-Ok", strings.Repeat("a", transport.MaxHeaderValueBytes+1), "config.headers[X-Ok]", "longer than"},
		{"X Bad", "1", `config.headers["X Bad"]`, "not a valid header name"},
		{"X-Bad:", "1", `config.headers["X-Bad:"]`, "not a valid header name"},
		{"X-Bad\r\nY", "1", `config.headers["X-Bad\r\nY"]`, "not a valid header name"},
		{"", "1", `config.headers[""]`, "not a valid header name"},
		{long, "1", fmt.Sprintf("config.headers[%q]", long[:64]), "header name longer than 256 bytes (258)"},
	} {
		err := transport.Endpoint{Headers: map[string]string{c.name: c.value}}.Check(projectionSets...)
		inv, ok := errors.AsType[*journal.InvalidError](err)
		if !ok || inv.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q: %q) = %v; want an InvalidError of %s saying %q", c.name, c.value, err, c.field, c.want)
		}
		if strings.Contains(err.Error(), "X-Injected") {
			t.Errorf("Check(%q) = %v: the error repeats the value", c.name, err)
		}
	}
	dup := transport.Endpoint{Headers: map[string]string{"X-Tenant": "1", "x-tenant": "2"}}.Check()
	if inv, ok := errors.AsType[*journal.InvalidError](dup); !ok || !strings.Contains(dup.Error(), "repeats") {
		t.Errorf("Check(X-Tenant, x-tenant) = %v (%v); want a repeat refused", dup, inv)
	}
	if err := (transport.Endpoint{Headers: map[string]string{"X-Tenant": "42", "Authorization": "Bearer t"}}).Check(projectionSets...); err != nil {
		t.Errorf("Check(X-Tenant, Authorization) = %v; want nil where the projection does not set Authorization", err)
	}
}

// mutualTLS is a receiver on 127.0.0.1 that requires a client certificate
// ca signed, telling the common name of each client its handler serves.
func mutualTLS(t *testing.T, ca *keytest.CA) (*httptest.Server, <-chan string) {
	clients := make(chan string, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		clients <- r.TLS.PeerCertificates[0].Subject.CommonName
	}))
	srv.TLS = ca.RequireClients(t)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, clients
}

// clientCert is an Endpoint presenting a certificate ca signed for cn.
func clientCert(t *testing.T, ca *keytest.CA, cn string) transport.Endpoint {
	now := time.Now()
	cert, key := ca.Leaf(t, cn, false, now.Add(-time.Hour), now.Add(time.Hour))
	return transport.Endpoint{ClientCert: cert, ClientKey: key}
}

func TestClientCertificateIsPresentedToAReceiverThatRequiresOne(t *testing.T) {
	ca := keytest.NewCA(t)
	srv, clients := mutualTLS(t, ca)
	tr := newTransport(t, transport.Options{AllowPrivateNetwork: true, Timeout: 5 * time.Second, TLSConfig: &tls.Config{RootCAs: ca.Pool}})

	e := clientCert(t, ca, "tenant-42")
	if err := e.ValidAt(time.Now()); err != nil {
		t.Fatalf("ValidAt(now) = %v for a valid certificate", err)
	}
	out, err := tr.Deliver(context.Background(), withEndpoint(t, srv.URL, e), message(`{}`), at)
	if err != nil || !out.OK() {
		t.Fatalf("Deliver with the client certificate = %s, %v; want accepted", describe(out), err)
	}
	if cn := <-clients; cn != "tenant-42" {
		t.Errorf("the receiver saw client %q, want tenant-42", cn)
	}
}

// A receiver refusing a registration's client certificate (or its lack of
// one) refuses that registration's credentials: its failure, not the
// host's, which other registrations reach with theirs (DESIGN v4, "Host
// health is a judgement about the host"). The host not answering at all is
// still the host's.
func TestARefusedClientCertificateIsTheRegistrationsFailureNotTheHosts(t *testing.T) {
	ca := keytest.NewCA(t)
	srv, clients := mutualTLS(t, ca)
	tr := newTransport(t, transport.Options{AllowPrivateNetwork: true, Timeout: 5 * time.Second, TLSConfig: &tls.Config{RootCAs: ca.Pool}})
	for _, c := range []struct {
		name, want string
		reg        push.Registration
	}{
		{"no certificate", "client certificate refused by the receiver: tls: certificate required", registration(srv.URL)},
		{"a certificate of another CA", "client certificate refused by the receiver: tls: unknown certificate authority",
			withEndpoint(t, srv.URL, clientCert(t, keytest.NewCA(t), "stranger"))},
	} {
		out, err := tr.Deliver(context.Background(), c.reg, message(`{}`), at)
		if err != nil {
			t.Fatal(err)
		}
		if wantOwnFailure(t, out); out.Reason != c.want {
			t.Errorf("%s: Reason = %q, want %q", c.name, out.Reason, c.want)
		}
	}
	if len(clients) != 0 {
		t.Error("a request without an accepted client certificate reached the handler")
	}
	srv.Close()
	out, err := tr.Deliver(context.Background(), withEndpoint(t, srv.URL, clientCert(t, ca, "tenant-42")), message(`{}`), at)
	if err != nil {
		t.Fatal(err)
	}
	wantNoAnswer(t, out) // connection refused: the host's, certificate or not
}

func TestClientCertificateIsCheckedAtRegistration(t *testing.T) {
	ca := keytest.NewCA(t)
	now := time.Now()
	cert, key := ca.Leaf(t, "a", false, now.Add(-2*time.Hour), now.Add(time.Hour))
	_, otherKey := ca.Leaf(t, "b", false, now.Add(-2*time.Hour), now.Add(time.Hour))
	plain, _ := pem.Decode([]byte(key))
	locked, err := x509.EncryptPEMBlock(rand.Reader, plain.Type, plain.Bytes, []byte("passphrase"), x509.PEMCipherAES256) //nolint:staticcheck // an operator's legacy encrypted key, as openssl writes it
	if err != nil {
		t.Fatal(err)
	}
	encrypted := string(pem.EncodeToMemory(locked))
	for _, c := range []struct {
		name  string
		e     transport.Endpoint
		at    time.Time
		field string
		want  string
	}{
		{"key without certificate", transport.Endpoint{ClientKey: key}, now, "config.client_cert", "is missing"},
		{"certificate without key", transport.Endpoint{ClientCert: cert}, now, "config.client_key", "is missing"},
		{"key of another certificate", transport.Endpoint{ClientCert: cert, ClientKey: otherKey}, now, "config.client_key", "does not match"},
		{"not PEM", transport.Endpoint{ClientCert: "garbage", ClientKey: key}, now, "config.client_cert", "certificate"},
		{"encrypted key", transport.Endpoint{ClientCert: cert, ClientKey: encrypted}, now, "config.client_key", "is encrypted: give it decrypted"},
		{"encrypted PKCS#8 key", transport.Endpoint{ClientCert: cert, ClientKey: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"}, now, "config.client_key", "is encrypted"},
		{"expired", transport.Endpoint{ClientCert: cert, ClientKey: key}, now.Add(2 * time.Hour), "config.client_cert", "expired at"},
		{"not yet valid", transport.Endpoint{ClientCert: cert, ClientKey: key}, now.Add(-3 * time.Hour), "config.client_cert", "not valid before"},
	} {
		err := c.e.ValidAt(c.at)
		inv, ok := errors.AsType[*journal.InvalidError](err)
		if !ok || inv.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ValidAt = %v; want an InvalidError of %s saying %q", c.name, err, c.field, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: the error shows the key", c.name)
		}
	}
}

// connectProxy is a tiny HTTP CONNECT proxy on loopback that records the
// targets it was asked for and the Proxy-Authorization it got. With an
// answer, it answers every CONNECT with it and relays nothing (after a 200,
// the tunnel stays silent until the client hangs up).
type connectProxy struct {
	ln      net.Listener
	answer  string
	mu      sync.Mutex
	targets []string
	auth    []string
}

func newConnectProxy(t *testing.T, answer string) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{ln: ln, answer: answer}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(t, c) })
		}
	})
	return p
}

func (p *connectProxy) serve(t *testing.T, c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, req.Host)
	p.auth = append(p.auth, req.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if p.answer != "" {
		_, _ = io.WriteString(c, p.answer)
		_, _ = io.Copy(io.Discard, br)
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	done := make(chan struct{})
	go func() { _, _ = io.Copy(up, br); up.(*net.TCPConn).CloseWrite(); close(done) }()
	_, _ = io.Copy(c, up)
	<-done
}

func (p *connectProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *connectProxy) seen() (targets, auth []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.targets), slices.Clone(p.auth)
}

func TestEgressProxyTunnelsOnlyToCheckedAddresses(t *testing.T) {
	hosts := make(chan string, 4)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { hosts <- r.Host }))
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate()) // valid for example.com and 127.0.0.1
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy := newConnectProxy(t, "")
	dns := &fakeDNS{table: map[string][]string{"example.com": {"127.0.0.1"}, "metadata.example": {"169.254.169.254"}}}

	// The daemon's proxy, at a loopback address the guard would refuse as a
	// destination: the operator chose it, so it is not checked.
	opts := transport.Options{Proxy: proxy.url(), Resolver: dns, Timeout: 5 * time.Second, TLSConfig: &tls.Config{RootCAs: roots}}
	strict := newTransport(t, opts)
	out := deliver(t, strict, "https://example.com:"+port+"/hook", message(`{}`))
	if out.Verdict != push.Permanent || !strings.Contains(out.Reason, "127.0.0.1") {
		t.Fatalf("a destination resolving to loopback = %s; want refused", describe(out))
	}
	out = deliver(t, strict, "https://metadata.example/latest", message(`{}`))
	if out.Verdict != push.Permanent || !strings.Contains(out.Reason, "169.254.169.254") {
		t.Fatalf("a destination resolving to the metadata address = %s; want refused", describe(out))
	}
	if targets, _ := proxy.seen(); len(targets) != 0 {
		t.Fatalf("the proxy was asked for %q; a refused destination must never be CONNECTed", targets)
	}

	opts.AllowPrivateNetwork = true
	open := newTransport(t, opts)
	out = deliver(t, open, "https://example.com:"+port+"/hook", message(`{}`))
	if !out.OK() {
		t.Fatalf("an allowed destination through the proxy = %s; want accepted", describe(out))
	}
	if host := <-hosts; host != "example.com:"+port {
		t.Errorf("the receiver saw Host %q, want example.com:%s (TLS verified example.com through the tunnel)", host, port)
	}
	targets, _ := proxy.seen()
	if want := []string{"127.0.0.1:" + port}; !slices.Equal(targets, want) {
		t.Errorf("CONNECT targets = %q, want %q: the checked address, never the name the proxy would resolve again", targets, want)
	}
}

func TestRegistrationProxyIsGuardedAndSharedAcrossRequests(t *testing.T) {
	srv := newCounter(t, nil)
	proxy := newConnectProxy(t, "")
	withAuth := strings.Replace(proxy.url(), "http://", "http://egress:s3cret-pass@", 1)

	strict := newTransport(t, transport.Options{AllowHTTP: true, Timeout: 5 * time.Second})
	out, err := strict.Deliver(context.Background(), withEndpoint(t, srv.URL, transport.Endpoint{Proxy: withAuth}), message(`{}`), at)
	if err != nil || out.Verdict != push.Permanent || !strings.Contains(out.Reason, "127.0.0.1") || strings.Contains(out.Reason, "s3cret") {
		t.Fatalf("a registration's proxy on loopback without --allow-private-network = %s, %v; want refused, without its password", describe(out), err)
	}

	tr := newTransport(t, loopbackOptions())
	for _, h := range []string{"a", "b", "c"} { // three configs, one proxy: one client, one kept-alive tunnel
		e := transport.Endpoint{Proxy: withAuth, Headers: map[string]string{"X-Tenant": h}}
		out, err := tr.Deliver(context.Background(), withEndpoint(t, srv.URL, e), message(`{}`), at)
		if err != nil || !out.OK() {
			t.Fatalf("Deliver through the registration's proxy = %s, %v; want accepted", describe(out), err)
		}
	}
	targets, auth := proxy.seen()
	if len(targets) != 1 || targets[0] != srv.Listener.Addr().String() {
		t.Errorf("CONNECT targets = %q, want one tunnel to %s reused by the three requests", targets, srv.Listener.Addr())
	}
	if len(auth) != 1 || auth[0] != "Basic ZWdyZXNzOnMzY3JldC1wYXNz" {
		t.Errorf("Proxy-Authorization = %q, want Basic of egress:s3cret-pass", auth)
	}
	if srv.hits.Load() != 3 {
		t.Errorf("the receiver got %d requests, want 3", srv.hits.Load())
	}
}

// A registration's own proxy failing (unreachable, refusing the CONNECT,
// or a tunnel that stalls) is that registration's failure, never its
// host's, which other registrations reach without that proxy (DESIGN v4,
// "Host health is a judgement about the host"). A tenant's proxy could
// fail in the host's place at will; what herald learns without it (the
// host's name not resolving) is still the host's, and so is the daemon's
// own proxy failing: every registration's route, held rather than parked.
func TestARegistrationsOwnProxyFailingIsTheRegistrationsNotTheHosts(t *testing.T) {
	srv := newCounter(t, nil)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + closed.Addr().String()
	closed.Close()
	opts := loopbackOptions()
	opts.Timeout = 500 * time.Millisecond
	tr := newTransport(t, opts)
	for _, c := range []struct{ name, proxy, want string }{
		{"unreachable", unreachable, "connection refused"},
		{"CONNECT answered 502", newConnectProxy(t, "HTTP/1.1 502 Bad Gateway\r\n\r\n").url(), `answered "502 Bad Gateway"`},
		{"CONNECT answered 407", newConnectProxy(t, "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n").url(), `answered "407 Proxy Authentication Required"`},
		{"a tunnel that stalls", newConnectProxy(t, "HTTP/1.1 200 OK\r\n\r\n").url(), "through the registration's proxy: timeout"},
	} {
		out, err := tr.Deliver(context.Background(), withEndpoint(t, srv.URL, transport.Endpoint{Proxy: c.proxy}), message(`{}`), at)
		if err != nil {
			t.Fatal(err)
		}
		wantOwnFailure(t, out)
		mustContain(t, c.name+": Reason", out.Reason, c.want)
	}
	if out := deliver(t, tr, srv.URL, message(`{}`)); !out.OK() || srv.hits.Load() != 1 {
		t.Fatalf("the host itself = %s after %d requests; want it reached, accepting", describe(out), srv.hits.Load())
	}

	dns := loopbackOptions()
	dns.Resolver = &fakeDNS{}
	out, err := newTransport(t, dns).Deliver(context.Background(),
		withEndpoint(t, "http://nowhere.test/hook", transport.Endpoint{Proxy: newConnectProxy(t, "").url()}), message(`{}`), at)
	if err != nil {
		t.Fatal(err)
	}
	wantNoAnswer(t, out)
	mustContain(t, "Reason", out.Reason, "dns: ")

	daemons := loopbackOptions()
	daemons.Proxy = unreachable
	wantNoAnswer(t, deliver(t, newTransport(t, daemons), srv.URL, message(`{}`)))
}

// A registration's proxy named in Unicode is dialled by the name IDNA
// maps it to, as a destination's is ("ｌｏｃａｌｈｏｓｔ" is "localhost"):
// dialled as typed it never resolved, and every delivery through it failed.
func TestANonASCIIProxyNameIsDialledAsIDNAMapsIt(t *testing.T) {
	srv := newCounter(t, nil)
	proxy := newConnectProxy(t, "")
	_, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
	tr := newTransport(t, loopbackOptions())
	out, err := tr.Deliver(context.Background(), withEndpoint(t, srv.URL, transport.Endpoint{Proxy: "http://ｌｏｃａｌｈｏｓｔ:" + port}), message(`{}`), at)
	if err != nil || !out.OK() {
		t.Fatalf("Deliver through http://ｌｏｃａｌｈｏｓｔ:%s = %s, %v; want accepted", port, describe(out), err)
	}
	if targets, _ := proxy.seen(); len(targets) != 1 || srv.hits.Load() != 1 {
		t.Errorf("CONNECT targets = %q, receiver hits %d; want one tunnel, one request", targets, srv.hits.Load())
	}
}

func TestProxyURLIsChecked(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"https://proxy.example:3128", "plain HTTP CONNECT"},
		{"socks5://proxy.example:1080", "plain HTTP CONNECT"},
		{"http://:3128", "has no host"},
		{"http://proxy.example:3128/path", "path, query or fragment"},
		{"http://u:p%zz@proxy.example", "cannot be parsed"},
		{"http://proxy.example:0", "has port 0: it must be 1 to 65535"},
		{"http://proxy.example:99999", "has port 99999"},
		{"http://a\u202eb.example:3128", "no domain name"},
		{"http://" + strings.Repeat("a", 3000) + ":3128", "longer than 2048 bytes (3012)"},
	} {
		_, err := transport.ParseProxy("--egress-proxy", c.raw)
		if inv, ok := errors.AsType[*journal.InvalidError](err); !ok || inv.Field != "--egress-proxy" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseProxy(%q) = %v; want an InvalidError of --egress-proxy saying %q", c.raw, err, c.want)
		}
	}
	if _, err := transport.New(transport.Options{Proxy: "ftp://x"}); err == nil || !strings.Contains(err.Error(), "Options.Proxy") {
		t.Errorf("New with a bad Proxy = %v; want an error naming Options.Proxy", err)
	}
}

// A client certificate whose RSA key is past MaxRSAKeyBits is refused,
// naming config.client_key: each handshake would sign with it, a quarter of
// a second of CPU or more taken from every other registration.
func TestAClientKeyPastMaxRSAKeyBitsIsRefused(t *testing.T) {
	keyPEM, err := os.ReadFile(filepath.Join("..", "testdata", "activitypub", "rsa-8200-test-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(keyPEM)
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "big"},
		NotBefore: at.Add(-time.Hour), NotAfter: at.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.(*rsa.PrivateKey).Public(), key.(crypto.Signer))
	if err != nil {
		t.Fatal(err)
	}
	e := transport.Endpoint{ClientCert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), ClientKey: string(keyPEM)}
	err = e.Check()
	if inv, ok := errors.AsType[*journal.InvalidError](err); !ok || inv.Field != "config.client_key" || !strings.Contains(err.Error(), "is an RSA key of 8200 bits: at most 8192") {
		t.Fatalf("Check of a client certificate with an 8200-bit key = %v; want config.client_key refused", err)
	}
}

// A proxy's answer to CONNECT never carries its credentials into a
// reason: a proxy that echoes them (in its status text, or in a status
// line too malformed to read) would otherwise show the daemon's
// --egress-proxy password in every tenant's evidence, and in the logs.
func TestAProxysAnswerEchoingItsPasswordIsRedacted(t *testing.T) {
	srv := newCounter(t, nil)
	const user, password = "egress", "s3cret-pass"
	basic := "ZWdyZXNzOnMzY3JldC1wYXNz" // base64 of egress:s3cret-pass
	tr := newTransport(t, loopbackOptions())
	for _, answer := range []string{
		"HTTP/1.1 403 denied for " + password + "\r\n\r\n",
		"HTTP/1.1 407 bad " + user + ":" + password + "\r\n\r\n",
		"HTTP/1.1 407 bad Basic " + basic + "\r\n\r\n",
		"HTTP/1.1 4x7 " + password + "\r\n\r\n",
		password + "\r\n\r\n",
	} {
		p := newConnectProxy(t, answer)
		withAuth := strings.Replace(p.url(), "http://", "http://"+user+":"+password+"@", 1)
		out, err := tr.Deliver(context.Background(), withEndpoint(t, srv.URL, transport.Endpoint{Proxy: withAuth}), message(`{}`), at)
		if err != nil {
			t.Fatal(err)
		}
		wantOwnFailure(t, out)
		if strings.Contains(out.Reason, password) || strings.Contains(out.Reason, basic) {
			t.Errorf("the proxy answering %q: Reason %q shows its password", answer, out.Reason)
		}
		mustContain(t, "Reason", out.Reason, "CONNECT")
	}
}
