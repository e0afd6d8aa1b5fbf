package tracing

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"
)

// ServerHandler is the gRPC stats handler that gives every call a server
// span, continuing the trace its caller propagated. Health checks are left
// out: load balancers send them every few seconds and they say nothing
// about a call. otelgrpc's metrics are not wanted (dedupd exports its own
// to Prometheus), so they go to a no-op meter.
func ServerHandler(tp trace.TracerProvider) stats.Handler {
	return otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithPropagators(Propagator),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()),
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())))
}
