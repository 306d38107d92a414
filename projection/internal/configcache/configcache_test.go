package configcache

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestCacheParsesOncePerConfig(t *testing.T) {
	var mu sync.Mutex
	parsed := map[string]int{}
	c := New(2, func(raw []byte) (string, error) {
		mu.Lock()
		parsed[string(raw)]++
		mu.Unlock()
		if string(raw) == "bad" {
			return "", errors.New("bad config")
		}
		return "parsed:" + string(raw), nil
	})
	for range 3 {
		v, err := c.Get([]byte("a"))
		if err != nil || v != "parsed:a" {
			t.Fatalf("Get(a) = %q, %v", v, err)
		}
	}
	if parsed["a"] != 1 {
		t.Fatalf("config a parsed %d times, want 1", parsed["a"])
	}
	for range 2 {
		if _, err := c.Get([]byte("bad")); err == nil {
			t.Fatal("Get(bad) gave no error")
		}
	}
	if parsed["bad"] != 2 || c.Len() != 1 {
		t.Fatalf("errors must not be cached: bad parsed %d times, %d entries", parsed["bad"], c.Len())
	}
}

func TestCacheIsBoundedOldestFirst(t *testing.T) {
	calls := 0
	c := New(2, func(raw []byte) (string, error) { calls++; return string(raw), nil })
	for _, k := range []string{"a", "b", "c"} {
		if _, err := c.Get([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 2 {
		t.Fatalf("Len = %d, want the bound 2", c.Len())
	}
	calls = 0
	_, _ = c.Get([]byte("c")) // still cached
	_, _ = c.Get([]byte("a")) // evicted first
	if calls != 1 {
		t.Fatalf("parse called %d times, want 1 (only the evicted oldest entry)", calls)
	}
}

func TestCacheConcurrentGet(t *testing.T) {
	c := New(8, func(raw []byte) (string, error) { return string(raw), nil })
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 100 {
				k := fmt.Sprint((i + j) % 12)
				if v, err := c.Get([]byte(k)); err != nil || v != k {
					t.Errorf("Get(%s) = %q, %v", k, v, err)
				}
			}
		})
	}
	wg.Wait()
	if c.Len() > 8 {
		t.Fatalf("Len = %d exceeds the bound 8", c.Len())
	}
}
