package store_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

// TestBackoffPinned pins exact delays: any change of formula, hash, byte
// order or separator moves at least one of them.
func TestBackoffPinned(t *testing.T) {
	cases := []struct {
		stream, id string
		failures   int
		want       time.Duration
	}{
		{"actor/alice", "https://remote.example/inbox", 0, 1 * time.Second},
		{"actor/alice", "https://remote.example/inbox", 1, 2 * time.Second},
		{"actor/alice", "https://remote.example/inbox", 2, 3 * time.Second},
		{"actor/alice", "https://remote.example/inbox", 3, 8 * time.Second},
		{"actor/alice", "https://remote.example/inbox", 5, 31 * time.Second},
		{"actor/alice", "https://remote.example/inbox", 8, 234 * time.Second},
		{"actor/alice", "https://remote.example/inbox", 31, 232 * time.Second},
		{"task/8f3c", "push-1", 4, 12 * time.Second},
		{"task/8f3c", "push-2", 4, 10 * time.Second},
	}
	for _, c := range cases {
		require.Equal(t, c.want, store.Backoff(c.stream, c.id, c.failures), "Backoff(%q, %q, %d)", c.stream, c.id, c.failures)
	}
}

// TestBackoffFormula checks the bounds the formula promises, for many
// registrations: delay in [max(1, half), window], capped from the ninth
// failure on, and a different spread for different registrations.
func TestBackoffFormula(t *testing.T) {
	distinct := map[time.Duration]bool{}
	for i := range 200 {
		id := fmt.Sprintf("r%d", i)
		for a := range 12 {
			window := time.Duration(1<<min(a, 8)) * time.Second
			d := store.Backoff("s", id, a)
			require.GreaterOrEqual(t, d, max(time.Second, window/2), "failures %d", a)
			require.LessOrEqual(t, d, max(time.Second, window), "failures %d", a)
			require.Equal(t, d, store.Backoff("s", id, a), "deterministic")
			if a == 8 {
				distinct[d] = true
			}
		}
	}
	require.Greater(t, len(distinct), 50, "jitter spreads 200 registrations over many instants")

	// An independent computation of one value, from the words of DESIGN.md.
	h := sha256.Sum256(append([]byte("s\x1fr7\x1f"), 0, 0, 0, 6))
	spread := binary.BigEndian.Uint64(h[:8])
	half := uint64(1<<6) / 2
	require.Equal(t, time.Duration(half+spread%(half+1))*time.Second, store.Backoff("s", "r7", 6))
}
