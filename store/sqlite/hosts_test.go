package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// TestHeldHostCostsNoWritePerSweep: once a host is down and one Due has
// seen it, the wake marker of a stream whose only lagging registrations are
// held is the host's next probe instant, so the sweeps until then find no
// woken stream and take no write lock; the probe's claim moves the marker
// to the next probe, and an answer wakes the stream at once.
func TestHeldHostCostsNoWritePerSweep(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "herald.db"))
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Append(ctx, "s", journal.Entry{ID: "e1", Kind: "test.event", Payload: []byte(`{}`)})
	require.NoError(t, err)
	for i := range 3 {
		_, err := s.Register(ctx, push.Registration{Stream: "s", ID: fmt.Sprintf("r%d", i), Namespace: "webhook", URL: "https://down.example/inbox"})
		require.NoError(t, err)
	}
	policy := push.HostPolicy{DownAfter: 3, Horizon: push.MinHostHorizon}
	var h push.Host
	for _, st := range claim(t, s, idleT0, 10).Registrations {
		h, err = s.HostFailed(ctx, push.HostFailure{Claim: st.Claim(), NextSeq: 1, Host: st.Host(),
			Evidence: push.Evidence{At: idleT0, Error: "timeout"}, Policy: policy})
		require.NoError(t, err)
	}
	require.Equal(t, push.HostDown, h.State)

	// Its registrations' retries (HostRetryAt) are due before the probe:
	// the first Due after them sets the marker to the probe instant.
	for when := idleT0.Add(4 * time.Second); when.Before(h.NextProbeAt); when = when.Add(250 * time.Millisecond) {
		require.Empty(t, claim(t, s, when, 10).Registrations, "held at %v", when)
		require.Equal(t, map[string]int64{"s": h.NextProbeAt.UnixNano()}, woken(t, s), "the marker waits for the probe: no write until then")
	}
	probe := claim(t, s, h.NextProbeAt, 10)
	require.Len(t, probe.Registrations, 1, "one probe")
	next, _, err := getHost(ctx, s.r, h.Host)
	require.NoError(t, err)
	require.Equal(t, h.NextProbeAt.Add(push.ProbeDelay(h.Host, 1)), next.NextProbeAt)

	_, err = s.HostAnswered(ctx, h.Host, h.NextProbeAt)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"s": dueNow}, woken(t, s), "an answer wakes the host's streams")
	require.Len(t, claim(t, s, h.NextProbeAt.Add(30*time.Second), 10).Registrations, 2, "the other two are released (the probe is still leased)")
}
