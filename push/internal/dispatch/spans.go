package dispatch

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push/wire"
)

// startTurn starts a turn's span; endTurn ends it. Attributes are computed
// only for a recording span: a no-op tracer costs two interface calls.
func (t *turn) startTurn(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := t.w.tracer.Start(ctx, wire.SpanTurn, internalStart...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(wire.AttrNamespace, t.reg.Namespace), attribute.String(wire.AttrHost, t.hostName),
			attribute.String(wire.AttrStream, t.reg.Stream), attribute.String(wire.AttrReg, t.reg.ID))
	}
	return ctx, span
}

func endTurn(span trace.Span, rep wire.SweepReport, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int(wire.AttrRecords, rep.Records), endOutcome(span, err))
	}
	span.End()
}

// endOutcome is a turn's or sweep's outcome attribute, marking the span
// failed on an error (whose text, which may quote a receiver, is not copied).
func endOutcome(span trace.Span, err error) attribute.KeyValue {
	if err != nil {
		span.SetStatus(codes.Error, "store or journal error")
		return attribute.String(wire.AttrOutcome, "error")
	}
	return attribute.String(wire.AttrOutcome, "ok")
}

// startSweep starts a RunOnce's span; endSweep ends it with its report.
func (w *Engine) startSweep(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := w.tracer.Start(ctx, wire.SpanSweep, internalStart...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(wire.AttrNamespace, w.namespace))
	}
	return ctx, span
}

func endSweep(span trace.Span, rep wire.SweepReport, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int(wire.AttrClaimed, rep.Registrations), attribute.Int(wire.AttrRecords, rep.Records),
			attribute.Bool(wire.AttrSaturated, rep.Saturated), endOutcome(span, err))
	}
	span.End()
}

// Span start options, built once: one made per span allocates per message.
var (
	internalStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	deliveryStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// startDelivery starts one attempt's span, endDelivery ends it. A turn span
// that neither records nor has a valid context (an SDK's, even sampled out,
// has one) means no tracer: no span (nil), sparing three allocations.
func (t *turn) startDelivery(ctx context.Context) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.IsRecording() && !parent.SpanContext().IsValid() {
		return ctx, nil
	}
	return t.w.tracer.Start(ctx, wire.SpanDelivery, deliveryStart...)
}

func (t *turn) endDelivery(span trace.Span, out wire.Outcome, err error) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String(wire.AttrNamespace, t.reg.Namespace), attribute.String(wire.AttrHost, t.hostName),
			attribute.Int(wire.AttrAttempt, t.attempts+1))
		if err != nil {
			span.SetAttributes(attribute.String(wire.AttrOutcome, "stopped"))
		} else {
			span.SetAttributes(attribute.String(wire.AttrOutcome, out.Verdict.String()))
			if out.Status != 0 {
				span.SetAttributes(attribute.Int(wire.AttrStatus, out.Status))
			}
			if out.Verdict != wire.Accepted {
				span.SetStatus(codes.Error, out.Verdict.String())
			}
		}
	}
	span.End()
}

// withTrace returns msg with rec's trace context, if any (W3C Trace Context
// §3): a child of its traceparent (journal.ChildTraceparent), its tracestate.
func withTrace(msg wire.Message, rec journal.Record) wire.Message {
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
