package throttle

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)

// A client has Burst failures at once, then one every Every; waiting gives
// its tries back, and other clients are not touched.
func TestFailuresAreAllowedInABurstThenOneEveryInterval(t *testing.T) {
	now := t0
	th := New(func() time.Time { return now }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	a, b := Of(netip.MustParseAddr("192.0.2.1")), Of(netip.MustParseAddr("192.0.2.2"))
	for i := range Burst {
		if w := th.Wait(a, "test"); w != 0 {
			t.Fatalf("failure %d: wait %v, want none within the burst", i+1, w)
		}
		th.Failed(a, "test")
	}
	if w := th.Wait(a, "test"); w <= 0 || w > Every+time.Second {
		t.Fatalf("after the burst: wait %v, want about %v", w, Every)
	}
	if w := th.Wait(b, "test"); w != 0 {
		t.Fatalf("another client waits %v", w)
	}
	now = now.Add(Every)
	if w := th.Wait(a, "test"); w != 0 {
		t.Fatalf("one interval later: wait %v, want one try", w)
	}
	th.Failed(a, "test")
	if w := th.Wait(a, "test"); w == 0 {
		t.Fatal("the try given back was used, yet the client may try again at once")
	}
	now = now.Add(Burst * Every)
	for i := range Burst {
		if th.Wait(a, "test") != 0 {
			t.Fatalf("after a long wait, failure %d is not allowed: the burst was not given back", i+1)
		}
		th.Failed(a, "test")
	}
}

// The clients remembered are bounded: past maxClients, those with a whole
// allowance are forgotten, and if none is, new clients share one.
func TestClientsRememberedAreBounded(t *testing.T) {
	th := New(func() time.Time { return t0 }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range maxClients + 100 {
		c := Of(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}))
		th.Failed(c, "test")
	}
	if n := len(th.clients); n > maxClients {
		t.Fatalf("%d clients remembered, bound %d", n, maxClients)
	}
	if th.crowd.tries != 0 {
		t.Fatalf("the 100 clients past the bound left %v tries of their shared allowance, want 0", th.crowd.tries)
	}
}

// The client is the TCP peer, or behind a proxy the last X-Forwarded-For
// address (the proxy's word; earlier ones are the client's); an IPv6
// client is its /64.
func TestClientOfARequest(t *testing.T) {
	for _, c := range []struct {
		remote, xff string
		proxy       bool
		want        string
	}{
		{"192.0.2.7:4242", "", false, "192.0.2.7/32"},
		{"192.0.2.7:4242", "203.0.113.9", false, "192.0.2.7/32"},
		{"192.0.2.7:4242", "203.0.113.9", true, "203.0.113.9/32"},
		{"192.0.2.7:4242", "1.2.3.4, 203.0.113.9", true, "203.0.113.9/32"},
		{"192.0.2.7:4242", "not an address", true, "192.0.2.7/32"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", false, "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.7]:443", "", false, "192.0.2.7/32"},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := Client(r, c.proxy); fmt.Sprint(got) != c.want {
			t.Errorf("Client(%s, X-Forwarded-For %q, proxy %t) = %s, want %s", c.remote, c.xff, c.proxy, got, c.want)
		}
	}
}
