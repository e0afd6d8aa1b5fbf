package tracing

import (
	"context"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestEnabled: tracing is on only when the environment asks for it, and a
// setting dedupd cannot honour is an error rather than silence.
func TestEnabled(t *testing.T) {
	cases := []struct {
		env     map[string]string
		on, bad bool
	}{
		{map[string]string{}, false, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, true, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}, true, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, false, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, false, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, false, true},
	}
	for _, tc := range cases {
		on, err := Enabled(func(k string) string { return tc.env[k] })
		if on != tc.on || (err != nil) != tc.bad {
			t.Errorf("%v: on=%v err=%v; want on=%v, error %v", tc.env, on, err, tc.on, tc.bad)
		}
	}
}

// TestFromEnv: off without configuration; on, a provider whose resource
// names the service dedupd unless the environment renames it. Nothing is
// sent: no span is started.
func TestFromEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	if tp, err := FromEnv(context.Background(), slog.New(slog.DiscardHandler)); tp != nil || err != nil {
		t.Fatalf("unconfigured: %v, %v; want nil, nil", tp, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	for _, tc := range []struct{ serviceName, want string }{{"", ServiceName}, {"billing-dedupd", "billing-dedupd"}} {
		t.Setenv("OTEL_SERVICE_NAME", tc.serviceName)
		tp, err := FromEnv(context.Background(), slog.New(slog.DiscardHandler))
		if err != nil || tp == nil {
			t.Fatalf("configured: %v, %v", tp, err)
		}
		_, span := tp.Tracer("test").Start(context.Background(), "unsent")
		got := span.(sdktrace.ReadOnlySpan).Resource().Set()
		if name, _ := got.Value("service.name"); name.AsString() != tc.want {
			t.Errorf("service.name = %q, want %q", name.AsString(), tc.want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := tp.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		cancel()
	}
}
