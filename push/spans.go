package push

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldpush/herald/journal"
)

// OpenTelemetry spans (README, "One trace from the append to the
// receiver"). A worker records a span per RunOnce, SpanSweep, one per
// turn, SpanTurn (inside the sweep's; under Run, which has no sweeps, a
// turn's span is a root), and one per delivery attempt inside it,
// SpanDelivery, through the TracerProvider of
// WithTracerProvider (default: OpenTelemetry's global one, a no-op until a
// program installs an SDK). Their attributes name the namespace, the host
// (host:port, never a URL path, which may be a capability), the HTTP status,
// the attempt and the outcome; never a secret, header or body.

// Span names and attribute keys.
const (
	SpanSweep    = "herald.sweep"
	SpanTurn     = "herald.turn"
	SpanDelivery = "herald.delivery"

	AttrNamespace = "herald.namespace"
	AttrHost      = "server.address" // HostOf form, "example.com:443"
	AttrStatus    = "http.response.status_code"
	AttrAttempt   = "herald.attempt" // 1-based attempt at the record
	AttrOutcome   = "herald.outcome" // delivery: accepted, transient, permanent, rejected; turn: ok, error
	AttrRecords   = "herald.records" // records a turn acknowledged
	AttrStream    = "herald.stream"  // the registration's stream
	AttrReg       = "herald.registration"
	AttrClaimed   = "herald.registrations" // sweep: registrations claimed
	AttrSaturated = "herald.saturated"     // sweep: more were due than its limit
)

// tracerName is the instrumentation scope of herald's spans.
const tracerName = "github.com/heraldpush/herald/push"

// WithTracerProvider sets where the worker's spans go (default
// otel.GetTracerProvider()).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}

func (o options) tracer() trace.Tracer {
	tp := o.tracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startTurn starts a turn's span; endTurn ends it with what the turn did.
// Attributes are computed only for a recording span, so a no-op tracer
// costs the turn two interface calls.
func (t *turn) startTurn(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := t.w.tracer.Start(ctx, SpanTurn, internalStart...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrNamespace, t.reg.Namespace), attribute.String(AttrHost, t.reg.Host()),
			attribute.String(AttrStream, t.reg.Stream), attribute.String(AttrReg, t.reg.ID))
	}
	return ctx, span
}

func endTurn(span trace.Span, rep SweepReport, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int(AttrRecords, rep.Records), endOutcome(span, err))
	}
	span.End()
}

// endOutcome is a turn's or sweep's outcome attribute, "ok" or "error",
// and marks the span failed on an error (a store's or journal's; its text
// may quote a receiver, so it is not copied).
func endOutcome(span trace.Span, err error) attribute.KeyValue {
	if err != nil {
		span.SetStatus(codes.Error, "store or journal error")
		return attribute.String(AttrOutcome, "error")
	}
	return attribute.String(AttrOutcome, "ok")
}

// startSweep starts a RunOnce's span; endSweep ends it with its report.
func (w *Worker) startSweep(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := w.tracer.Start(ctx, SpanSweep, internalStart...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrNamespace, w.namespace))
	}
	return ctx, span
}

func endSweep(span trace.Span, rep SweepReport, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int(AttrClaimed, rep.Registrations), attribute.Int(AttrRecords, rep.Records),
			attribute.Bool(AttrSaturated, rep.Saturated), endOutcome(span, err))
	}
	span.End()
}

// Span start options, built once: an option made per span is an
// allocation per message even when no tracer records.
var (
	internalStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	deliveryStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// startDelivery starts one attempt's span, endDelivery ends it with its
// outcome. When the turn's span neither records nor carries a valid span
// context, no tracer was installed when the turn started (an SDK's span,
// even one its sampler dropped, has a valid context): the delivery gets
// no span (nil) and ctx unchanged, sparing the no-op span and the context
// that carries it, three allocations a message.
func (t *turn) startDelivery(ctx context.Context) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.IsRecording() && !parent.SpanContext().IsValid() {
		return ctx, nil
	}
	return t.w.tracer.Start(ctx, SpanDelivery, deliveryStart...)
}

func (t *turn) endDelivery(span trace.Span, out Outcome, err error) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrNamespace, t.reg.Namespace), attribute.String(AttrHost, t.reg.Host()),
			attribute.Int(AttrAttempt, t.attempts+1))
		if err != nil {
			span.SetAttributes(attribute.String(AttrOutcome, "stopped"))
		} else {
			span.SetAttributes(attribute.String(AttrOutcome, out.Verdict.String()))
			if out.Status != 0 {
				span.SetAttributes(attribute.Int(AttrStatus, out.Status))
			}
			if out.Verdict != Accepted {
				span.SetStatus(codes.Error, out.Verdict.String())
			}
		}
	}
	span.End()
}

// withTrace returns msg with the trace context of rec, if it has one: a
// child of its traceparent (journal.ChildTraceparent: the trace id and
// flags kept, a new span id for this delivery) in the traceparent header,
// and its tracestate as given (W3C Trace Context §3).
func withTrace(msg Message, rec journal.Record) Message {
	if rec.Traceparent == "" {
		return msg
	}
	h := msg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Traceparent", journal.ChildTraceparent(rec.Traceparent))
	if rec.Tracestate != "" {
		h.Set("Tracestate", rec.Tracestate)
	}
	msg.Header = h
	return msg
}
