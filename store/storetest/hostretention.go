package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

// testAHostWithNoRegistrationAndNoFailureForTheRetentionAgeIsRemoved:
// per-host state is bounded. Prune removes a host's row once no
// registration is of it and its last failure is older than the retention
// age (a dry run counts it and changes nothing); a host with a
// registration stays however old its failure; a host removed that fails
// again is stored anew.
func testAHostWithNoRegistrationAndNoFailureForTheRetentionAgeIsRemoved(t *testing.T, b Backend) {
	ctx := t.Context()
	const retain = time.Hour
	downHost(t, b, 2, at(0)) // a0, a1 on hostA, down by failures at 0, 10 and 20 s; b on hostB
	on := dueOn(t, b, hostB, "b", at(30))
	require.Len(t, on, 1)
	hostFail(t, b, on[0], at(30))
	stored := func() []string {
		return mapped(hosts(t, b, store.HostQuery{}), func(h store.Host) string { return h.Host })
	}
	pruneAt := func(when time.Time, dry bool) int {
		return pruneAll(t, b, store.PruneQuery{At: when, Retain: retain, DryRun: dry}).Hosts
	}
	require.Equal(t, []string{hostA, hostB}, stored())
	require.Zero(t, pruneAt(at(3600*24), false), "every host has a registration: kept however old its failure")

	require.NoError(t, b.Unregister(ctx, "s", "a0"))
	require.NoError(t, b.Unregister(ctx, "s", "a1"))
	require.Zero(t, pruneAt(at(20).Add(retain-time.Second), false), "hostA failed last within the retention age")
	require.Equal(t, 1, pruneAt(at(20).Add(retain), true), "a dry run counts hostA")
	require.Equal(t, []string{hostA, hostB}, stored(), "and changes nothing")
	require.Equal(t, 1, pruneAt(at(20).Add(retain), false))
	require.Equal(t, []string{hostB}, stored(), "hostA, down with no registration left, is gone")

	require.NoError(t, b.Unregister(ctx, "s", "b"))
	require.Equal(t, 1, pruneAt(at(30).Add(retain), false))
	require.Empty(t, stored())

	register(t, b, onHost("s", "again", hostA))
	on = dueOn(t, b, hostA, "again", at(4000))
	require.Len(t, on, 1)
	h := hostFail(t, b, on[0], at(4000))
	require.Equal(t, store.HostUp, h.State)
	require.Equal(t, 1, h.Failures, "stored anew, its old failures forgotten")
	require.Equal(t, []string{hostA}, stored())
}
