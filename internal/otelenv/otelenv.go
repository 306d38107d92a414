// Package otelenv installs an OTLP/HTTP (protobuf) trace exporter as the
// standard OTEL_* environment asks, and nothing otherwise; which variables
// turn it on and which values are refused: README, "One trace from the
// append to the receiver".
package otelenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Environment names Setup reads itself (the exporter and SDK read more).
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
)

// samplers are the OTEL_TRACES_SAMPLER values the SDK knows; it would only
// log and replace the others the specification names (jaeger_remote, xray).
var samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// Config is what Setup decided from the environment.
type Config struct {
	Enabled bool
	Why     string // the variable that turned export on, for the log
}

// FromEnv decides from getenv (os.Getenv in Setup) whether traces are
// exported, or returns an error naming the variable that cannot be honoured.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if strings.EqualFold(get(EnvSDKDisabled), "true") {
		return Config{}, nil
	}
	var why string
	switch exp := strings.ToLower(get(EnvTracesExporter)); {
	case exp == "otlp":
		why = EnvTracesExporter + "=otlp"
	case exp == "none":
	case exp != "":
		return Config{}, fmt.Errorf("%s=%q: herald exports traces by otlp only (or none)", EnvTracesExporter, truncate(exp))
	case get(EnvTracesEndpoint) != "":
		why = EnvTracesEndpoint
	case get(EnvEndpoint) != "":
		why = EnvEndpoint
	}
	if why == "" {
		return Config{}, nil
	}
	k := EnvTracesProtocol // the signal-specific one wins
	if get(k) == "" {
		k = EnvProtocol
	}
	if p := get(k); p != "" && p != "http/protobuf" {
		return Config{}, fmt.Errorf("%s=%q: herald's OTLP exporter speaks http/protobuf only", k, truncate(p))
	}
	// The SDK would log a sampler it cannot use and sample everything.
	if smp := get(EnvSampler); smp != "" {
		if !slices.Contains(samplers, smp) {
			return Config{}, fmt.Errorf("%s=%q: not a sampler the SDK knows (%s)", EnvSampler, truncate(smp), strings.Join(samplers, ", "))
		}
		if arg := get(EnvSamplerArg); arg != "" && strings.HasSuffix(smp, "traceidratio") {
			if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
				return Config{}, fmt.Errorf("%s=%q: the ratio of %s must be a number from 0 to 1", EnvSamplerArg, truncate(arg), smp)
			}
		}
	}
	return Config{Enabled: true, Why: why}, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Setup installs the global TracerProvider the environment asks for
// (getenv is os.Getenv but in tests; the exporter reads the process's
// environment itself). It returns what it decided and the function that
// flushes and stops the exporter at exit, a no-op when export is off.
func Setup(ctx context.Context, getenv func(string) string) (Config, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	cfg, err := FromEnv(getenv)
	if err != nil || !cfg.Enabled {
		return cfg, noop, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return Config{}, noop, fmt.Errorf("OTLP trace exporter (%s): %w", cfg.Why, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "herald")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return Config{}, noop, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return cfg, tp.Shutdown, nil
}
