package transport_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// at is the caller's instant in every test: a Sunday, so that the
// HTTP-dates below name the right weekday.
var at = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// loopbackOptions opt in to what httptest servers need: plain http on
// 127.0.0.1.
func loopbackOptions() transport.Options {
	return transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 5 * time.Second}
}

func newTransport(t *testing.T, opts transport.Options) *transport.HTTP {
	t.Helper()
	tr, err := transport.New(opts)
	if err != nil {
		t.Fatalf("transport.New(%v): %v", opts, err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func registration(url string) push.Registration {
	return push.Registration{Stream: "task/8f3c", ID: "receiver-1", Namespace: "webhook", URL: url}
}

func message(body string) push.Message {
	return push.Message{ID: "msg-1", ContentType: "application/json", Body: []byte(body)}
}

func deliver(t *testing.T, tr push.Transport, url string, msg push.Message) push.Outcome {
	t.Helper()
	out, err := tr.Deliver(context.Background(), registration(url), msg, at)
	if err != nil {
		t.Fatalf("Deliver(%s): error %v, want an Outcome", url, err)
	}
	return out
}

// counter is an httptest server that counts the requests it gets.
type counter struct {
	*httptest.Server
	hits atomic.Int64
}

func newCounter(t *testing.T, h http.HandlerFunc) *counter {
	t.Helper()
	c := &counter{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(c.Close)
	return c
}

// port is the server's port, for URLs that name another host.
func (c *counter) port() string {
	_, p, _ := net.SplitHostPort(c.Listener.Addr().String())
	return p
}

// fakeDNS is a Resolver that answers from a table (or fails with err) and
// records questions, so tests need no real DNS.
type fakeDNS struct {
	mu    sync.Mutex
	table map[string][]string
	err   error
	asked []string
}

func (d *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	d.mu.Lock()
	d.asked = append(d.asked, host)
	d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	ips, ok := d.table[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var addrs []netip.Addr
	for _, ip := range ips {
		addrs = append(addrs, netip.MustParseAddr(ip))
	}
	return addrs, nil
}

func (d *fakeDNS) questions() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

func mustContain(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s = %q, want it to contain %q", what, got, want)
	}
}

// wantNoAnswer fails unless out is a Transient, host-level failure without
// a status: what an attempt that got no answer gives.
func wantNoAnswer(t *testing.T, out push.Outcome) {
	t.Helper()
	if out.Verdict != push.Transient || out.Status != 0 || !out.HostLevel {
		t.Fatalf("got %s (host-level %t), want transient, host-level, without status", describe(out), out.HostLevel)
	}
}

// wantOwnFailure fails unless out is a Transient failure without a status
// that is the registration's own: not host-level, and no answer of the host.
func wantOwnFailure(t *testing.T, out push.Outcome) {
	t.Helper()
	if out.Verdict != push.Transient || out.Status != 0 || out.HostLevel || out.HostAnswered() {
		t.Fatalf("got %s (host-level %t), want transient, the registration's (not host-level), without status", describe(out), out.HostLevel)
	}
}

func describe(o push.Outcome) string {
	return fmt.Sprintf("%v status=%d retry_after=%v/%t location=%q reason=%q", o.Verdict, o.Status, o.RetryAfter, o.HasRetryAfter, o.Location, o.Reason)
}
