package projconfig

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

type config struct {
	K string `json:"k"`
}

// counting returns a projection whose check counts its calls per key and
// refuses the key "bad".
func counting(size int) (*Projection[string], func(string) int) {
	var mu sync.Mutex
	parsed := map[string]int{}
	p := New("test", size, func(c config) (string, error) {
		mu.Lock()
		parsed[c.K]++
		mu.Unlock()
		if c.K == "bad" {
			return "", journal.Invalid("config.k", "is bad")
		}
		return "parsed:" + c.K, nil
	})
	return p, func(k string) int { mu.Lock(); defer mu.Unlock(); return parsed[k] }
}

func raw(k string) push.Config { return push.Config(fmt.Sprintf(`{"k":%q}`, k)) }

func TestGetParsesOncePerConfig(t *testing.T) {
	p, parsed := counting(2)
	for range 3 {
		v, err := Get(p, raw("a"))
		if err != nil || v != "parsed:a" {
			t.Fatalf("Get(a) = %q, %v", v, err)
		}
	}
	if parsed("a") != 1 {
		t.Fatalf("config a parsed %d times, want 1", parsed("a"))
	}
	for range 2 {
		if err := p.ValidateConfig(push.Registration{Config: raw("bad")}); !errors.Is(err, journal.ErrInvalid) {
			t.Fatalf("ValidateConfig(bad) = %v, want the check's error", err)
		}
	}
	if err := p.ValidateConfig(push.Registration{Config: push.Config(`{"j":1}`)}); !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("ValidateConfig of an unknown key = %v, want the decoder's error", err)
	}
	if parsed("bad") != 2 || len(p.parsed.Order) != 1 {
		t.Fatalf("errors must not be cached: bad parsed %d times, %d entries", parsed("bad"), len(p.parsed.Order))
	}
}

func TestGetIsBoundedOldestFirst(t *testing.T) {
	p, parsed := counting(2)
	for _, k := range []string{"a", "b", "c"} {
		if _, err := Get(p, raw(k)); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.parsed.Order) != 2 || len(p.parsed.Items) != 2 {
		t.Fatalf("%d entries, want the bound 2", len(p.parsed.Order))
	}
	_, _ = Get(p, raw("c")) // still cached
	_, _ = Get(p, raw("a")) // evicted first
	if parsed("c") != 1 || parsed("a") != 2 {
		t.Fatalf("c parsed %d times, a %d; want only the evicted oldest entry parsed again", parsed("c"), parsed("a"))
	}
}

func TestGetConcurrently(t *testing.T) {
	p, _ := counting(8)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 100 {
				k := fmt.Sprint((i + j) % 12)
				if v, err := Get(p, raw(k)); err != nil || v != "parsed:"+k {
					t.Errorf("Get(%s) = %q, %v", k, v, err)
				}
			}
		})
	}
	wg.Wait()
	if len(p.parsed.Order) > 8 {
		t.Fatalf("%d entries exceed the bound 8", len(p.parsed.Order))
	}
}

func TestNamespaceAndTerminal(t *testing.T) {
	p, _ := counting(1)
	if p.Namespace() != "test" || p.Terminal(journal.Record{}) || !p.Terminal(journal.Record{Final: true}) {
		t.Fatalf("namespace %q, Terminal not rec.Final", p.Namespace())
	}
}
