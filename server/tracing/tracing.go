// Package tracing is dedupd's OpenTelemetry tracing: a tracer provider
// configured by the standard OTEL_* environment variables that exports over
// OTLP/gRPC, and the gRPC stats handlers that start and propagate call
// spans. The store decorator that gives each store call a span of its own
// is server/store/storetrace.
//
// Tracing is off unless the environment asks for it; off, nothing here is
// installed at all, so it costs nothing. Spans carry the consumer and the
// outcome of a call, never keys, digests, results or credentials.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ServiceName is the service.name of dedupd's spans unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES says otherwise.
const ServiceName = "dedupd"

// Propagator is how trace context travels in gRPC metadata: W3C Trace
// Context and Baggage, the OpenTelemetry defaults.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Enabled reports whether the environment (read through getenv) asks for
// traces: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with
// no exporter named. OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none
// turn it off. An exporter or protocol dedupd does not ship is an error,
// so that a misspelt setting is not silently ignored.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch exporter := getenv("OTEL_TRACES_EXPORTER"); exporter {
	case "none":
		return false, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, nil
		}
	case "otlp":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%.40q: dedupd exports traces only with otlp (or none)", exporter)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(name); p != "" && p != "grpc" {
			return false, fmt.Errorf("%s=%.40q: dedupd exports OTLP over grpc only", name, p)
		}
	}
	return true, nil
}

// FromEnv returns a tracer provider that batches spans to the OTLP/gRPC
// endpoint the environment names, sampled as OTEL_TRACES_SAMPLER says
// (parent-based, always on, by default), or nil when Enabled says tracing
// is off. The caller shuts it down, which flushes the spans still queued.
// When tracing is on it says so on log, naming the exporter, the endpoint
// and the sampler, and OpenTelemetry's own errors go to log (LogTo).
func FromEnv(ctx context.Context, log *slog.Logger) (*sdktrace.TracerProvider, error) {
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	LogTo(log)
	exporter, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Later detectors win: the environment overrides the default name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, errors.Join(fmt.Errorf("trace resource: %w", err), exporter.Shutdown(ctx))
	}
	log.Info("tracing on", "exporter", "otlp", "protocol", "grpc", "endpoint", Endpoint(os.Getenv),
		"sampler", Sampler(os.Getenv))
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)), nil
}
