// Package otelenv installs an OpenTelemetry trace exporter when the
// standard OTEL_* environment asks for one, and nothing otherwise.
//
// herald's spans (push: SpanTurn, SpanDelivery, SpanSweep) go to
// OpenTelemetry's global TracerProvider, a no-op until a program installs
// an SDK. `herald run` calls Setup, which installs one exporting by
// OTLP over HTTP (protobuf) when
//
//   - OTEL_TRACES_EXPORTER is "otlp", or
//   - OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
//     (and OTEL_TRACES_EXPORTER is not "none"),
//
// and OTEL_SDK_DISABLED is not "true". The exporter and the SDK read the
// rest of the standard variables themselves: the endpoint, headers,
// timeout, compression and certificates (OTEL_EXPORTER_OTLP_*), the
// sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), the batch
// processor (OTEL_BSP_*) and the resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES; service.name defaults to "herald"). Only the
// http/protobuf protocol is built in: OTEL_EXPORTER_OTLP_PROTOCOL (or its
// _TRACES_ form) naming grpc or http/json is refused, as is any exporter
// but otlp and none, and a sampler (OTEL_TRACES_SAMPLER, _ARG) the SDK
// would only log and replace, with an error naming the variable.
package otelenv

import (
	"context"
	"errors"
	"fmt"
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

// samplers are the OTEL_TRACES_SAMPLER values the SDK knows; the others
// the specification names (jaeger_remote, xray) it would only log and
// replace, so they are refused.
var samplers = map[string]bool{"always_on": true, "always_off": true, "traceidratio": true,
	"parentbased_always_on": true, "parentbased_always_off": true, "parentbased_traceidratio": true}

// Config is what Setup decided from the environment.
type Config struct {
	Enabled bool
	// Why names the variable that turned export on, for the log.
	Why string
}

// FromEnv decides from getenv (os.Getenv in Setup) whether traces are
// exported, or returns an error naming the variable that cannot be honoured.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if strings.EqualFold(get(EnvSDKDisabled), "true") {
		return Config{}, nil
	}
	var cfg Config
	switch exp := strings.ToLower(get(EnvTracesExporter)); exp {
	case "none":
		return Config{}, nil
	case "otlp":
		cfg = Config{Enabled: true, Why: EnvTracesExporter + "=otlp"}
	case "":
		if get(EnvTracesEndpoint) != "" {
			cfg = Config{Enabled: true, Why: EnvTracesEndpoint}
		} else if get(EnvEndpoint) != "" {
			cfg = Config{Enabled: true, Why: EnvEndpoint}
		}
	default:
		return Config{}, fmt.Errorf("%s=%q: herald exports traces by otlp only (or none)", EnvTracesExporter, truncate(exp))
	}
	if !cfg.Enabled {
		return cfg, nil
	}
	for _, k := range []string{EnvTracesProtocol, EnvProtocol} {
		p := get(k)
		if p == "" {
			continue
		}
		if p != "http/protobuf" {
			return Config{}, fmt.Errorf("%s=%q: herald's OTLP exporter speaks http/protobuf only", k, truncate(p))
		}
		break // the signal-specific one wins
	}
	// The SDK logs a sampler it cannot use and samples everything instead:
	// refuse it here, where the operator sees it.
	if smp := get(EnvSampler); smp != "" {
		if !samplers[smp] {
			return Config{}, fmt.Errorf("%s=%q: not a sampler the SDK knows (always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)", EnvSampler, truncate(smp))
		}
		if arg := get(EnvSamplerArg); arg != "" && strings.HasSuffix(smp, "traceidratio") {
			if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
				return Config{}, fmt.Errorf("%s=%q: the ratio of %s must be a number from 0 to 1", EnvSamplerArg, truncate(arg), smp)
			}
		}
	}
	return cfg, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Setup installs the global TracerProvider that the environment asks for
// (see the package documentation; getenv is os.Getenv but in tests, and
// the exporter reads its own variables from the process's environment) and returns what to call at exit to
// flush and stop it: a no-op when export is off. The returned Config says
// whether it is on.
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
