package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the exporter's goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// jsonLines decodes every line of a JSON log, failing on one that is not.
func jsonLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q (%v)", line, err)
		}
		out = append(out, m)
	}
	return out
}

// With tracing on and no collector, the failed exports are WARN lines of
// the JSON log, not plain text on stderr; the start-up line names the
// exporter, the endpoint (without its password) and the sampler.
func TestOpenTelemetryErrorsGoThroughTheLog(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:secret@127.0.0.1:1") // nothing listens
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "100")                             // ms: give up soon
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")                                 // ms: export soon
	var out syncBuffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	tp, err := FromEnv(context.Background(), log)
	if err != nil || tp == nil {
		t.Fatalf("FromEnv: %v, %v", tp, err)
	}
	defer func() { _ = tp.Shutdown(context.Background()) }()
	_, span := tp.Tracer("test").Start(context.Background(), "undeliverable")
	span.End()

	// Export keeps failing, every 10ms; wait for its line, however slow the
	// machine. The cap only turns a missing line into a failure, not a hang.
	for giveUp := time.Now().Add(2 * time.Minute); !strings.Contains(out.String(), "opentelemetry error"); {
		if time.Now().After(giveUp) {
			t.Fatalf("no OpenTelemetry error reached the log:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	lines := jsonLines(t, out.String())
	start := lines[0]
	if start["msg"] != "tracing on" || start["exporter"] != "otlp" || start["endpoint"] != "http://127.0.0.1:1" ||
		start["sampler"] != "parentbased_always_on" || start["level"] != "INFO" {
		t.Errorf("start-up line = %v", start)
	}
	if strings.Contains(out.String(), "secret") {
		t.Errorf("the endpoint's password was logged:\n%s", out.String())
	}
	for _, l := range lines[1:] {
		if l["msg"] == "opentelemetry error" && (l["level"] != "WARN" || l["err"] == "") {
			t.Errorf("OpenTelemetry error line = %v", l)
		}
	}
}

func TestEndpointAndSampler(t *testing.T) {
	cases := []struct {
		env              map[string]string
		endpoint, sample string
	}{
		{map[string]string{}, "localhost:4317", "parentbased_always_on"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, "http://c:4317", "parentbased_always_on"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t:4317",
			"OTEL_TRACES_SAMPLER": "traceidratio"}, "https://t:4317", "traceidratio"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://u:p@c:4317/x"}, "https://c:4317/x", "parentbased_always_on"},
	}
	for _, tc := range cases {
		getenv := func(k string) string { return tc.env[k] }
		if got := Endpoint(getenv); got != tc.endpoint {
			t.Errorf("%v: endpoint %q, want %q", tc.env, got, tc.endpoint)
		}
		if got := Sampler(getenv); got != tc.sample {
			t.Errorf("%v: sampler %q, want %q", tc.env, got, tc.sample)
		}
	}
}
