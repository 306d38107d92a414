package journal_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldpush/herald/journal"
)

const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestValidateTraceparentNamesTheField(t *testing.T) {
	require.NoError(t, journal.ValidateTraceparent("traceparent", tp))
	require.NoError(t, journal.ValidateTraceparent("traceparent", ""))
	for _, bad := range []string{
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero parent id
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // uppercase
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // short
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", // flags
		"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
	} {
		_, err := journal.ValidateEntries("s", []journal.Entry{{ID: "a", Kind: "k", Payload: []byte(`{}`), Traceparent: bad}}, 0)
		require.ErrorIs(t, err, journal.ErrInvalid, bad)
		var inv *journal.InvalidError
		require.True(t, errors.As(err, &inv))
		require.Equal(t, "entries[0].traceparent", inv.Field, bad)
	}
	_, err := journal.ValidateEntries("s", []journal.Entry{{ID: "a", Kind: "k", Payload: []byte(`{}`), Tracestate: "k=v"}}, 0)
	require.ErrorContains(t, err, "tracestate")
	_, err = journal.ValidateEntries("s", []journal.Entry{{ID: "a", Kind: "k", Payload: []byte(`{}`), Traceparent: tp, Tracestate: "k=\x01"}}, 0)
	require.ErrorContains(t, err, "entries[0].tracestate")
}

func TestChildTraceparentKeepsTraceAndFlags(t *testing.T) {
	a, b := journal.ChildTraceparent(tp), journal.ChildTraceparent(tp)
	for _, c := range []string{a, b} {
		require.NoError(t, journal.ValidateTraceparent("child", c))
		require.Equal(t, tp[:36], c[:36], "same version and trace id")
		require.Equal(t, tp[52:], c[52:], "flags kept (sampled)")
		require.NotEqual(t, tp[36:52], c[36:52], "a new span id")
	}
	require.NotEqual(t, a, b, "each delivery its own span id")
	require.Empty(t, journal.ChildTraceparent(""))
}

func TestWithContextTrace(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=x")
	require.NoError(t, err)
	ctx := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}))
	in := []journal.Entry{{ID: "a"}, {ID: "b", Traceparent: "00-11111111111111111111111111111111-2222222222222222-00"}}
	out := journal.WithContextTrace(ctx, in)
	require.Equal(t, tp, out[0].Traceparent)
	require.Equal(t, "vendor=x", out[0].Tracestate)
	require.Equal(t, in[1], out[1], "an entry's own trace context wins")
	require.Empty(t, in[0].Traceparent, "the caller's slice is not changed")
	require.Equal(t, in, journal.WithContextTrace(t.Context(), in), "no span, no change")
}
