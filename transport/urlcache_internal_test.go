package transport

import (
	"errors"
	"fmt"
	"testing"
)

// The URL cache answers as the guard does: an accepted URL comes back
// parsed (the same answer on the second look), a refused one is refused
// every time and never kept, and it holds at most urlCacheSize URLs however
// many it is shown.
func TestURLCacheAnswersAsTheGuard(t *testing.T) {
	g := &guard{allowHTTP: true}
	var c urlCache
	for range 2 {
		u, err := c.check(g, "https://example.com/hook?x=1")
		if err != nil || u.Host != "example.com" || u.Path != "/hook" || u.RawQuery != "x=1" {
			t.Fatalf("check(accepted) = %v, %v", u, err)
		}
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
