package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// testAHostsSchemeIsKeptOnItsRowBesideItsHealth: store.HostSchemes. A host
// with no row has no scheme; setting one makes the row, up, and every
// reader sees it; setting again replaces it; the host's failures and an
// operator's reset leave it, and it leaves them; bad input changes nothing.
func testAHostsSchemeIsKeptOnItsRowBesideItsHealth(t *testing.T, b Backend) {
	ctx := t.Context()
	scheme, learned, err := b.HostScheme(ctx, hostB)
	require.NoError(t, err)
	require.Empty(t, scheme)
	require.True(t, learned.IsZero())

	require.NoError(t, b.SetHostScheme(ctx, hostB, "cavage", at(5)))
	scheme, learned, err = b.HostScheme(ctx, hostB)
	require.NoError(t, err)
	require.Equal(t, "cavage", scheme)
	require.True(t, learned.Equal(at(5)), "learned at %v, want %v", learned, at(5))
	require.Equal(t, []store.Host{{Host: hostB, State: store.HostUp, Since: at(5)}}, utcHosts(hosts(t, b, store.HostQuery{})),
		"the row is made, up, with no failures")

	downHost(t, b, 2, at(10)) // hostA down
	require.NoError(t, b.SetHostScheme(ctx, hostA, "rfc9421", at(40)))
	require.NoError(t, b.SetHostScheme(ctx, hostB, "rfc9421", at(50)))
	listed := utcHosts(hosts(t, b, store.HostQuery{}))
	require.Len(t, listed, 2)
	require.Equal(t, store.HostDown, listed[0].State, "setting a scheme leaves the host's health")
	require.Equal(t, store.HostUp, listed[1].State)
	_, err = b.ResetHost(ctx, hostA, at(60))
	require.NoError(t, err)
	for host, want := range map[string]string{hostA: "rfc9421", hostB: "rfc9421"} {
		scheme, learned, err = b.HostScheme(ctx, host)
		require.NoError(t, err)
		require.Equal(t, want, scheme, host)
		require.False(t, learned.IsZero())
	}

	for _, bad := range []struct{ host, scheme string }{
		{"", "cavage"}, {hostA, ""}, {hostA, "Cavage"}, {hostA, "rfc 9421"}, {hostA, strings.Repeat("a", store.MaxSchemeBytes+1)},
	} {
		err := b.SetHostScheme(ctx, bad.host, bad.scheme, at(70))
		require.True(t, errors.Is(err, journal.ErrInvalid), "SetHostScheme(%q, %q) = %v", bad.host, bad.scheme, err)
	}
	require.ErrorIs(t, b.SetHostScheme(ctx, hostA, "cavage", time.Time{}), journal.ErrInvalid)
	_, _, err = b.HostScheme(ctx, "")
	require.ErrorIs(t, err, journal.ErrInvalid)
	scheme, _, err = b.HostScheme(ctx, hostA)
	require.NoError(t, err)
	require.Equal(t, "rfc9421", scheme, "bad input changed nothing")
}

// utcHosts drops Held and puts instants in UTC, for comparison.
func utcHosts(hs []store.Host) []store.Host {
	for i := range hs {
		hs[i].Since = hs[i].Since.UTC()
	}
	return hs
}
