package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
)

var traceTests = []test{
	{"StoredWithTheRecord", testTraceStored},
}

func testTraceStored(t *testing.T, b Backend) {
	const (
		tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		ts = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
	)
	e := entry("traced")
	e.Traceparent, e.Tracestate = tp, ts
	require.NoError(t, errOf(b.Append(ctx(t), "s", entry("plain"), e)))
	recs := readAll(t, b, "s")
	require.Len(t, recs, 2)
	require.Empty(t, recs[0].Traceparent)
	require.Equal(t, tp, recs[1].Traceparent)
	require.Equal(t, ts, recs[1].Tracestate)
	got, err := b.Lookup(ctx(t), "traced")
	require.NoError(t, err)
	require.Equal(t, tp, got.Traceparent)

	again := entry("traced")
	again.Traceparent = "00-11111111111111111111111111111111-2222222222222222-00"
	repeat, err := b.Append(ctx(t), "s", again)
	require.NoError(t, err, "the trace context is not the record's content: a retried append from another trace is the same record")
	require.Len(t, repeat, 1)
	require.Equal(t, uint64(2), repeat[0].Seq)
	require.Equal(t, tp, repeat[0].Traceparent, "a repeat returns the record as stored, with the trace context of its first append")
	require.Equal(t, ts, repeat[0].Tracestate)
	require.Equal(t, uint64(2), head(t, b, "s"))

	bad := entry("bad")
	bad.Traceparent = "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
	require.ErrorIs(t, errOf(b.Append(ctx(t), "s", bad)), journal.ErrInvalid)
	require.ErrorIs(t, errOf(b.Lookup(ctx(t), "bad")), journal.ErrNotFound, "nothing was written")
}
