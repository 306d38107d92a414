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

// WithTracerProvider sets where the worker's spans go (default
// otel.GetTracerProvider(), a no-op until a program installs an SDK).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}

func (o options) tracer() trace.Tracer {
	tp := o.tracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer("github.com/heraldpush/herald/push")
}

// startTurn starts a turn's span; endTurn ends it. Attributes are computed
// only for a recording span: a no-op tracer costs two interface calls.
func (t *turn) startTurn(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := t.w.tracer.Start(ctx, SpanTurn, internalStart...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrNamespace, t.reg.Namespace), attribute.String(AttrHost, t.hostName),
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

// endOutcome is a turn's or sweep's outcome attribute, marking the span
// failed on an error (whose text, which may quote a receiver, is not copied).
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
	return t.w.tracer.Start(ctx, SpanDelivery, deliveryStart...)
}

func (t *turn) endDelivery(span trace.Span, out Outcome, err error) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrNamespace, t.reg.Namespace), attribute.String(AttrHost, t.hostName),
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

// withTrace returns msg with rec's trace context, if any (W3C Trace Context
// §3): a child of its traceparent (journal.ChildTraceparent), its tracestate.
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
