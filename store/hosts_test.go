package store_test

import (
	"testing"
	"time"

	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

// TestProbeSchedulePinned pins the probe instants of a host that goes down
// and stays down: any change of key, offset or formula moves one of them.
func TestProbeSchedulePinned(t *testing.T) {
	want := map[string][]time.Duration{
		"a.example:443": {8, 10, 22, 55, 89, 193},
		"b.example:443": {4, 13, 19, 34, 70, 153},
	}
	for host, delays := range want {
		for n, d := range delays {
			require.Equal(t, d*time.Second, store.ProbeDelay(host, n), "ProbeDelay(%q, %d)", host, n)
		}
	}

	horizon := 2 * time.Hour
	h := store.Host{Host: "a.example:443"}
	for i := range 3 {
		require.NotEqual(t, store.HostDown, h.State, "not down before the third failure")
		h = h.Failed(store.Evidence{At: at(i), Error: "dial: connection refused"}, horizon)
	}
	require.Equal(t, store.HostDown, h.State)
	require.Equal(t, at(2), h.Since)
	require.Equal(t, at(10), h.NextProbeAt, "8 s after the third failure")
	require.Equal(t, "down", h.Transition(store.Host{Host: h.Host, State: store.HostUp}))
	var probes []time.Time
	for when := h.NextProbeAt; when.Before(at(400)); when = h.NextProbeAt {
		h = h.Probed(when)
		h = h.Failed(store.Evidence{At: when, Error: "timeout"}, horizon)
		probes = append(probes, when)
	}
	require.Equal(t, []time.Time{at(10), at(20), at(42), at(97), at(186), at(379)}, probes)

	h = h.Failed(store.Evidence{At: at(2).Add(2 * time.Hour), Error: "timeout"}, horizon)
	require.Equal(t, store.HostUnavailable, h.State, "down for the horizon: unavailable")
	require.Equal(t, at(2).Add(3*time.Hour), h.NextProbeAt, "probed hourly")
	h = h.Probed(h.NextProbeAt)
	require.Equal(t, at(2).Add(4*time.Hour), h.NextProbeAt)

	up := h.Answered(at(2).Add(3 * time.Hour))
	require.Equal(t, store.HostUp, up.State)
	require.Zero(t, up.Failures)
	require.True(t, up.NextProbeAt.IsZero())
	require.Equal(t, "up", up.Transition(h))
	require.Equal(t, "timeout", up.LastError, "kept as history")
}
