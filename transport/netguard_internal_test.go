package transport

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
)

// The dialer's Control hook is the real guard: it judges the address the
// socket is about to connect to, and refuses what it cannot parse or any
// network but TCP.
func TestDialControl(t *testing.T) {
	g := &guard{}
	open := &guard{allowPrivate: true}
	for _, c := range []struct {
		network, address string
		refused, openOK  bool
	}{
		{"tcp4", "93.184.215.14:443", false, true},
		{"tcp6", "[2606:4700::1111]:443", false, true},
		{"tcp4", "127.0.0.1:443", true, true},
		{"tcp6", "[::1]:443", true, true},
		{"tcp6", "[::ffff:127.0.0.1]:443", true, true},
		{"tcp4", "169.254.169.254:80", true, false},
		{"tcp6", "[fe80::1%eth0]:80", true, false},
		{"tcp4", "0.0.0.0:80", true, false},
		{"udp4", "93.184.215.14:53", true, false},
		{"tcp4", "not-an-address", true, false},
		{"tcp4", "example.com:443", true, false},
	} {
		err := g.control(c.network, c.address, nil)
		if (err != nil) != c.refused || (err != nil && !errors.Is(err, ErrRefused)) {
			t.Errorf("control(%s, %s) = %v, want refused=%t", c.network, c.address, err, c.refused)
		}
		if err := open.control(c.network, c.address, nil); (err == nil) != c.openOK {
			t.Errorf("with AllowPrivateNetwork: control(%s, %s) = %v, want allowed=%t", c.network, c.address, err, c.openOK)
		}
	}
}

// The URL cache answers as the guard does: an accepted URL comes back
// parsed (the same answer on the second look), a refused one is refused
// every time and never kept, and it holds at most urlCacheSize URLs however
// many it is shown.
func TestURLCacheAnswersAsTheGuard(t *testing.T) {
	g := &guard{allowHTTP: true}
	var c urlCache
	var first *url.URL
	for range 2 {
		u, err := c.check(g, "https://example.com/hook?x=1")
		if err != nil || u.Host != "example.com" || u.Path != "/hook" || u.RawQuery != "x=1" {
			t.Fatalf("check(accepted) = %v, %v", u, err)
		}
		if first != nil && u != first {
			t.Fatal("the second look parsed the URL again instead of answering from the cache")
		}
		first = u
	}
	for range 2 {
		_, err := c.check(g, "https://127.0.0.1/hook")
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.OptIn != "--allow-private-network" {
			t.Fatalf("check(loopback) = %v, want the guard's refusal", err)
		}
	}
	if _, ok := c.m["https://127.0.0.1/hook"]; ok {
		t.Fatal("a refused URL was kept")
	}
	for i := range 3 * urlCacheSize {
		raw := fmt.Sprintf("https://h%d.example.com/", i)
		u, err := c.check(g, raw)
		if err != nil || u.Host != fmt.Sprintf("h%d.example.com", i) {
			t.Fatalf("check(%s) = %v, %v", raw, u, err)
		}
		if len(c.m) > urlCacheSize {
			t.Fatalf("cache holds %d URLs, bound %d", len(c.m), urlCacheSize)
		}
	}
}
