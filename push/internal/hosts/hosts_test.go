package hosts

import (
	"fmt"
	"testing"
	"time"
)

// A host is slow from its mark for SlowMemory, until a prompt turn of it
// forgets it; marks past SlowMemory are dropped as the table grows.
func TestASlowHostIsRememberedForSlowMemoryOrUntilItAnswers(t *testing.T) {
	tb := NewTable(4)
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	if tb.Slow("a:443", t0) {
		t.Fatal("a host never marked is slow")
	}
	tb.MarkSlow("a:443", t0)
	tb.MarkSlow("b:443", t0)
	if !tb.Slow("a:443", t0.Add(SlowMemory-time.Nanosecond)) {
		t.Fatal("a marked host is not slow within SlowMemory")
	}
	if tb.Slow("a:443", t0.Add(SlowMemory)) {
		t.Fatal("a marked host is still slow at SlowMemory")
	}
	tb.Answered("b:443")
	if tb.Slow("b:443", t0) {
		t.Fatal("a host that answered promptly is still slow")
	}
	later := t0.Add(2 * SlowMemory)
	for i := range 200 {
		tb.MarkSlow(fmt.Sprintf("h%d:443", i), later)
	}
	tb.mu.Lock()
	_, kept := tb.slow["a:443"]
	n := len(tb.slow)
	tb.mu.Unlock()
	if kept || n != 200 {
		t.Fatalf("after 200 fresh marks the table holds %d marks, the expired one kept: %v", n, kept)
	}
}
