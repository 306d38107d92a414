package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// W3C Trace Context (https://www.w3.org/TR/trace-context/, § below): each
// delivery of a record carries a child (ChildTraceparent) of the trace
// context of its append, so one trace runs from producer to receiver.

// MaxTracestateBytes bounds Entry.Tracestate: 32 list members of at most
// 256 characters each, with their separators (§3.3.1.1).
const MaxTracestateBytes = 32*257 - 1

// ValidateTraceparent checks a traceparent header value (§3.2): "00", a
// 32-hex-digit trace id, a 16-hex-digit parent id (neither all zeros) and 2
// hex digits of flags, joined by "-", lowercase; or empty (no trace
// context). Errors wrap ErrInvalid and name field.
func ValidateTraceparent(field, tp string) error {
	if tp == "" {
		return nil
	}
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(tp) != 55 {
		return Invalid(field, "%q is not version-traceid-parentid-flags (00-<32 hex>-<16 hex>-<2 hex>)", clip(tp))
	}
	version, trace, parent, flags := parts[0], parts[1], parts[2], parts[3]
	switch {
	case version != "00":
		return Invalid(field, "has version %q: only 00 is known", clip(version))
	case len(trace) != 32 || !lowerHex(trace):
		return Invalid(field, "trace id %q is not 32 lowercase hex digits", clip(trace))
	case strings.Trim(trace, "0") == "":
		return Invalid(field, "trace id is all zeros")
	case len(parent) != 16 || !lowerHex(parent):
		return Invalid(field, "parent id %q is not 16 lowercase hex digits", clip(parent))
	case strings.Trim(parent, "0") == "":
		return Invalid(field, "parent id is all zeros")
	case len(flags) != 2 || !lowerHex(flags):
		return Invalid(field, "flags %q are not 2 lowercase hex digits", clip(flags))
	}
	return nil
}

// ValidateTracestate checks a tracestate header value: at most
// MaxTracestateBytes of printable ASCII (§3.3.1), and set only with a
// traceparent. Errors wrap ErrInvalid and name field.
func ValidateTracestate(field, ts, traceparent string) error {
	if ts == "" {
		return nil
	}
	if traceparent == "" {
		return Invalid(field, "is set without a traceparent")
	}
	if len(ts) > MaxTracestateBytes {
		return Invalid(field, "is longer than %d bytes (%d)", MaxTracestateBytes, len(ts))
	}
	for i := 0; i < len(ts); i++ {
		if c := ts[i]; c < 0x20 || c > 0x7e {
			return Invalid(field, "has byte 0x%02x at %d: only printable ASCII is allowed", c, i)
		}
	}
	return nil
}

// ChildTraceparent returns a child of the valid traceparent tp: its version,
// trace id and flags (sampled stays sampled) with a new random span id; ""
// for an empty tp.
func ChildTraceparent(tp string) string {
	if len(tp) != 55 {
		return ""
	}
	var span [8]byte
	for span == [8]byte{} { // all zeros is not a span id
		_, _ = rand.Read(span[:]) // crypto/rand.Read never fails
	}
	return tp[:36] + hex.EncodeToString(span[:]) + tp[52:]
}

func lowerHex(s string) bool { return strings.TrimLeft(s, "0123456789abcdef") == "" }

// clip bounds hostile text quoted in an error, tighter than Invalid's own
// bound: herald_go_quote (store/postgres) writes the same cut, so a
// traceparent refused by herald_append reads as Go's refusal.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// WithContextTrace returns entries with the trace context of ctx's valid
// OpenTelemetry span (its span id as the parent id) set on each entry that
// has none, so a traced producer's trace reaches the receivers; stores call
// it in Append and AppendTx. It copies entries rather than change them.
func WithContextTrace(ctx context.Context, entries []Entry) []Entry {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return entries
	}
	tp := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
	ts := sc.TraceState().String()
	out := slices.Clone(entries)
	for i := range out {
		if out[i].Traceparent == "" {
			out[i].Traceparent, out[i].Tracestate = tp, ts
		}
	}
	return out
}
