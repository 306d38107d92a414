package push_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"net/http"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Spans recorded by the SDK's in-memory exporter: one turn span, a
// delivery span per attempt inside it, with the documented names and
// attributes, and nothing of the registration's secret or URL path.
func TestSpansForTurnsAndDeliveries(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := newFixture(t)
	f.append("s", 2)
	f.registered(push.Registration{Stream: "s", ID: "r",
		URL: "https://hooks.example/capability/t0k3n-in-path", Config: push.Config(`{"secret":"whsec_s3cr3t"}`)})
	rcv := &receiver{answer: func(_ push.Registration, msg push.Message, n int) push.Outcome {
		if msg.ID == "s#2" && n == 1 {
			return push.Outcome{Verdict: push.Transient, Status: 503, Reason: "503 at /capability/t0k3n-in-path"}
		}
		return push.Outcome{Verdict: push.Accepted, Status: 200}
	}}
	w := f.workerOn(rcv, push.WithTracerProvider(tp))
	_, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)

	spans := exp.GetSpans()
	require.Len(t, spans, 4)
	var sweep, turn tracetest.SpanStub
	var deliveries []tracetest.SpanStub
	for _, s := range spans {
		switch s.Name {
		case push.SpanSweep:
			sweep = s
		case push.SpanTurn:
			turn = s
		case push.SpanDelivery:
			deliveries = append(deliveries, s)
		default:
			t.Fatalf("unexpected span %q", s.Name)
		}
	}
	require.Len(t, deliveries, 2)
	attrs := func(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			m[kv.Key] = kv.Value
			require.NotContains(t, kv.Value.Emit(), "s3cr3t", "no secret in %s", kv.Key)
			require.NotContains(t, kv.Value.Emit(), "capability", "no URL path in %s", kv.Key)
		}
		require.NotContains(t, s.Status.Description, "capability")
		return m
	}
	sa := attrs(sweep)
	require.Equal(t, ns, sa[push.AttrNamespace].AsString())
	require.Equal(t, int64(1), sa[push.AttrClaimed].AsInt64())
	require.Equal(t, int64(1), sa[push.AttrRecords].AsInt64())
	require.False(t, sa[push.AttrSaturated].AsBool())
	require.Equal(t, "ok", sa[push.AttrOutcome].AsString())
	require.Equal(t, sweep.SpanContext.TraceID(), turn.SpanContext.TraceID())
	require.Equal(t, sweep.SpanContext.SpanID(), turn.Parent.SpanID(), "the turn is inside the sweep")
	ta := attrs(turn)
	require.Equal(t, ns, ta[push.AttrNamespace].AsString())
	require.Equal(t, "hooks.example:443", ta[push.AttrHost].AsString())
	require.Equal(t, int64(1), ta[push.AttrRecords].AsInt64())
	require.Equal(t, "ok", ta[push.AttrOutcome].AsString())
	for i, want := range []struct {
		outcome string
		status  int64
	}{{"accepted", 200}, {"transient", 503}} {
		d := deliveries[i]
		require.Equal(t, turn.SpanContext.TraceID(), d.SpanContext.TraceID())
		require.Equal(t, turn.SpanContext.SpanID(), d.Parent.SpanID(), "inside the turn")
		da := attrs(d)
		require.Equal(t, want.outcome, da[push.AttrOutcome].AsString())
		require.Equal(t, want.status, da[push.AttrStatus].AsInt64())
		require.Equal(t, int64(1), da[push.AttrAttempt].AsInt64())
		require.Equal(t, "hooks.example:443", da[push.AttrHost].AsString())
	}
	for _, s := range spans {
		require.False(t, strings.Contains(s.Name, "/"), "span names carry no path")
	}
}

// BenchmarkTurn: one sweep of one registration with one record, with the
// no-op tracer (what a worker uses when no SDK is installed) and with
// tracing through a recording SDK, for the cost of spans when off.
func BenchmarkTurn(b *testing.B) {
	for _, c := range []struct {
		name string
		opt  push.Option
	}{
		{"noop", push.WithTracerProvider(noop.NewTracerProvider())},
		{"sdk", push.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter())))},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b)
			_, err := f.store.Register(b.Context(), push.Registration{Stream: "s", ID: "r", Namespace: ns, URL: "https://a.example/in"})
			require.NoError(b, err)
			w, err := push.NewWorker(f.store, f.store, &receiver{}, f.proj, push.WithOwner("w1"), c.opt)
			require.NoError(b, err)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				f.append("s", 1)
				b.StartTimer()
				if _, err := w.RunOnce(b.Context(), at(i), 10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSpansOff: what a one-delivery sweep's spans cost when tracing
// is off: the sweep's, the turn's and the delivery's Start and End on the
// no-op tracer, nested as the worker nests them.
func BenchmarkSpansOff(b *testing.B) {
	tr := noop.NewTracerProvider().Tracer("bench")
	ctx := b.Context()
	b.ReportAllocs()
	for range b.N {
		c1, sweep := tr.Start(ctx, push.SpanSweep)
		c2, turn := tr.Start(c1, push.SpanTurn)
		_, d := tr.Start(c2, push.SpanDelivery)
		if d.IsRecording() || turn.IsRecording() || sweep.IsRecording() {
			b.Fatal("the no-op tracer recorded")
		}
		d.End()
		turn.End()
		sweep.End()
	}
}

// byName samples the spans of one name only, whatever their parent's
// decision.
type byName string

func (s byName) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name == string(s) {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.Drop}
}

func (s byName) Description() string { return "byName(" + string(s) + ")" }

// A sampler that drops the turn's span still sees every delivery's: the
// worker skips a delivery span only when no tracer was installed at all.
func TestDeliverySpansUnderASamplerThatDropsTheTurn(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(byName(push.SpanDelivery)))
	f := newFixture(t)
	f.append("s", 3)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: "https://hooks.example/in"})
	w := f.build(f.store, f.store, &receiver{}, f.proj, push.WithTracerProvider(tp))
	_, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)
	spans := exp.GetSpans()
	require.Len(t, spans, 3, "one span per delivery, none of the sweep or the turn")
	for _, s := range spans {
		require.Equal(t, push.SpanDelivery, s.Name)
	}
}

// The producer's trace reaches the receiver: each delivery carries a child
// of the appended traceparent (same trace id, a new span id, the sampled
// flag kept) and the tracestate as given; a record without one sends none.
func TestTraceparentReachesTheReceiver(t *testing.T) {
	got := make(chan http.Header, 4)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header
		w.WriteHeader(http.StatusOK)
	})
	tr := loopback(t, 0)
	f := newFixture(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	_, err := f.store.Append(t.Context(), "s",
		journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`), Traceparent: tp, Tracestate: "rojo=00f067aa0ba902b7"},
		journal.Entry{ID: "b", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: srv.URL + "/in"})
	w := f.workerOn(tr)
	rep, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Deliveries)

	h := <-got
	first := h.Get("traceparent")
	require.NoError(t, journal.ValidateTraceparent("received", first))
	require.Equal(t, tp[:36], first[:36], "the appended trace id")
	require.NotEqual(t, tp[36:52], first[36:52], "a new span id")
	require.Equal(t, "01", first[53:], "the sampled flag kept")
	require.Equal(t, "rojo=00f067aa0ba902b7", h.Get("tracestate"))
	second := <-got
	require.Equal(t, []string{"", ""}, []string{second.Get("traceparent"), second.Get("tracestate")}, "no trace context, no header")
}
