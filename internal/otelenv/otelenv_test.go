package otelenv_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/heraldpush/herald/internal/otelenv"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		enabled bool
		errHas  string // the variable the error must name
	}{
		{name: "nothing set: off", env: nil},
		{name: "endpoint turns it on", env: map[string]string{otelenv.EnvEndpoint: "http://127.0.0.1:4318"}, enabled: true},
		{name: "traces endpoint turns it on", env: map[string]string{otelenv.EnvTracesEndpoint: "http://127.0.0.1:4318/v1/traces"}, enabled: true},
		{name: "exporter otlp turns it on", env: map[string]string{otelenv.EnvTracesExporter: "otlp"}, enabled: true},
		{name: "exporter none wins over an endpoint", env: map[string]string{otelenv.EnvTracesExporter: "none", otelenv.EnvEndpoint: "http://127.0.0.1:4318"}},
		{name: "SDK disabled wins", env: map[string]string{otelenv.EnvSDKDisabled: "true", otelenv.EnvTracesExporter: "otlp"}},
		{name: "other exporter refused", env: map[string]string{otelenv.EnvTracesExporter: "zipkin"}, errHas: otelenv.EnvTracesExporter},
		{name: "grpc refused", env: map[string]string{otelenv.EnvEndpoint: "http://127.0.0.1:4317", otelenv.EnvProtocol: "grpc"}, errHas: otelenv.EnvProtocol},
		{name: "signal protocol wins over the general one", env: map[string]string{otelenv.EnvEndpoint: "x", otelenv.EnvTracesProtocol: "http/protobuf", otelenv.EnvProtocol: "grpc"}, enabled: true},
		{name: "signal protocol refused", env: map[string]string{otelenv.EnvEndpoint: "x", otelenv.EnvTracesProtocol: "http/json"}, errHas: otelenv.EnvTracesProtocol},
		{name: "protocol is not read when off", env: map[string]string{otelenv.EnvProtocol: "grpc"}},
		{name: "known sampler", env: map[string]string{otelenv.EnvTracesExporter: "otlp", otelenv.EnvSampler: "parentbased_traceidratio", otelenv.EnvSamplerArg: "0.25"}, enabled: true},
		{name: "unknown sampler refused", env: map[string]string{otelenv.EnvTracesExporter: "otlp", otelenv.EnvSampler: "bogus"}, errHas: otelenv.EnvSampler},
		{name: "ratio out of range refused", env: map[string]string{otelenv.EnvTracesExporter: "otlp", otelenv.EnvSampler: "traceidratio", otelenv.EnvSamplerArg: "1.5"}, errHas: otelenv.EnvSamplerArg},
		{name: "ratio not a number refused", env: map[string]string{otelenv.EnvTracesExporter: "otlp", otelenv.EnvSampler: "traceidratio", otelenv.EnvSamplerArg: "half"}, errHas: otelenv.EnvSamplerArg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := otelenv.FromEnv(func(k string) string { return c.env[k] })
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err = %v, want one naming %s", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Enabled != c.enabled {
				t.Fatalf("enabled = %v, want %v", cfg.Enabled, c.enabled)
			}
		})
	}
}

// TestSetupExportsSpans runs a worker's sweep with OTEL_EXPORTER_OTLP_ENDPOINT
// naming a loopback OTLP/HTTP receiver, and decodes what arrives.
func TestSetupExportsSpans(t *testing.T) {
	var (
		mu    sync.Mutex
		names = map[string]int{}
		svc   string
		got   = make(chan struct{}, 16)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+r.URL.Path+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					svc = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names[s.Name]++
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
		got <- struct{}{}
	}))
	defer srv.Close()

	t.Setenv(otelenv.EnvEndpoint, srv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	ctx := context.Background()
	cfg, shutdown, err := otelenv.Setup(ctx, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Enabled {
		t.Fatal("Setup did not turn export on with the endpoint set")
	}

	db := memory.New()
	if _, err := db.Append(ctx, "orders/1", journal.Entry{ID: "evt-1", Kind: "order.created", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Register(ctx, push.Registration{Stream: "orders/1", ID: "billing", Namespace: "webhook", URL: "https://billing.example/hooks"}); err != nil {
		t.Fatal(err)
	}
	accept := push.TransportFunc(func(context.Context, push.Registration, push.Message, time.Time) (push.Outcome, error) {
		return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
	})
	w, err := push.NewWorker(db, db, accept, passthrough{}) // the global provider: no option
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.RunOnce(ctx, time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC), 10); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(ctx); err != nil { // flushes the batch
		t.Fatal(err)
	}
	select {
	case <-got:
	default:
		t.Fatal("the OTLP receiver got no export request by the time Shutdown returned")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{push.SpanSweep, push.SpanTurn, push.SpanDelivery} {
		if names[name] == 0 {
			t.Errorf("no %q span exported; got %v", name, names)
		}
	}
	if svc != "herald" {
		t.Errorf("service.name = %q, want herald", svc)
	}
}

type passthrough struct{}

func (passthrough) Namespace() string                { return "webhook" }
func (passthrough) Terminal(rec journal.Record) bool { return rec.Final }
func (passthrough) Messages(_ context.Context, rec journal.Record, _ push.Registration) ([]push.Message, error) {
	return []push.Message{{ID: rec.ID, ContentType: rec.ContentType, Body: rec.Payload}}, nil
}
