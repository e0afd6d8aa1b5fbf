package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/client"
)

// TestTraceOfOneClaim runs the real server (Run, in process) with a tracer
// provider that records into memory, and a client with WithTracing under a
// root span. One Claim must make exactly this tree, in one trace:
//
//	test root -> client call -> server call -> store.Claim -> write batch
//
// with the consumer and the outcome on the store and batch spans, the
// batch linked to the call it wrote, and no key or digest anywhere. A
// health check makes no span.
func TestTraceOfOneClaim(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	serverSpan := &spanEnded{name: "dedup.v1.DedupService/Claim", kind: trace.SpanKindServer, ended: make(chan struct{})}
	// Processors run in order: the span is exported before the notice.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSpanProcessor(serverSpan))
	cfg := testConfig()
	cfg.DataDir = t.TempDir()
	cfg.EmbeddedEngine = EngineSQLite // the engine with a write-batch span
	cfg.TracerProvider = tp
	cfg.GroupCommit = true // as dedupd serve defaults to: claims go through a write batch
	addr := runInProcess(t, cfg)

	c, err := client.New(addr, client.WithTracing(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const key, digest = "order-7f3a-secret-key", "digest-never-traced"
	ctx, root := tp.Tracer("test").Start(context.Background(), "test root")
	if _, err := c.Claim(ctx, "billing", key, []byte(digest), client.ClaimOptions{}); err != nil {
		t.Fatal(err)
	}
	root.End()
	conn := dialServer(t, addr)
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	// The server ends its span after the reply has gone.
	select {
	case <-serverSpan.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the server span never ended")
	}

	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		id := fmt.Sprintf("%s/%s", s.Name, s.SpanKind) // kinds print as internal, client, server
		if _, dup := byName[id]; dup {
			t.Errorf("two spans %s", id)
		}
		byName[id] = s
		for _, a := range append(s.Attributes, linkAttributes(s)...) {
			if v := a.Value.String(); strings.Contains(v, key) || strings.Contains(v, digest) {
				t.Errorf("span %s attribute %s = %q carries the key or the digest", s.Name, a.Key, v)
			}
		}
	}
	want := []struct{ name, parent string }{
		{"test root/internal", ""},
		{"dedup.v1.DedupService/Claim/client", "test root/internal"},
		{"dedup.v1.DedupService/Claim/server", "dedup.v1.DedupService/Claim/client"},
		{"store.Claim/internal", "dedup.v1.DedupService/Claim/server"},
		{"sqlitestore.write_batch/internal", "store.Claim/internal"},
	}
	if len(byName) != len(want) {
		t.Errorf("%d spans, want %d: %v", len(byName), len(want), names(byName))
	}
	traceID := byName["test root/internal"].SpanContext.TraceID()
	for _, w := range want {
		s, ok := byName[w.name]
		switch {
		case !ok:
			t.Errorf("no span %s among %v", w.name, names(byName))
		case s.SpanContext.TraceID() != traceID:
			t.Errorf("span %s is in another trace", w.name)
		case w.parent != "" && s.Parent.SpanID() != byName[w.parent].SpanContext.SpanID():
			t.Errorf("span %s: parent %s, want %s", w.name, s.Parent.SpanID(), w.parent)
		}
	}
	storeSpan, batch := byName["store.Claim/internal"], byName["sqlitestore.write_batch/internal"]
	wantAttrs(t, storeSpan, map[string]string{"dedupd.consumer": "billing", "dedupd.outcome": "acquired"})
	wantAttrs(t, batch, map[string]string{"dedupd.batch.size": "1", "dedupd.outcome": "ok"})
	if len(batch.Links) != 1 || batch.Links[0].SpanContext.SpanID() != storeSpan.SpanContext.SpanID() {
		t.Errorf("batch links %v, want one link to store.Claim", batch.Links)
	}
}

// runInProcess runs Run until the test ends and returns the address it
// serves on, read from its "dedupd serving" log line.
func runInProcess(t *testing.T, cfg Config) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &servingAddr{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, slog.New(logs)) }()
	select {
	case addr := <-logs.addr:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		return addr
	case err := <-done:
		cancel()
		t.Fatalf("Run returned before serving: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("Run did not start serving")
	}
	return ""
}

// spanEnded is a span processor that closes ended when a span of that name
// and kind ends.
type spanEnded struct {
	name  string
	kind  trace.SpanKind
	once  sync.Once
	ended chan struct{}
}

func (s *spanEnded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spanEnded) OnEnd(span sdktrace.ReadOnlySpan) {
	if span.Name() == s.name && span.SpanKind() == s.kind {
		s.once.Do(func() { close(s.ended) })
	}
}
func (s *spanEnded) Shutdown(context.Context) error   { return nil }
func (s *spanEnded) ForceFlush(context.Context) error { return nil }

// servingAddr is a slog handler that keeps only the address of the
// "dedupd serving" line.
type servingAddr struct {
	once sync.Once
	addr chan string
}

func (h *servingAddr) Enabled(context.Context, slog.Level) bool { return true }
func (h *servingAddr) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *servingAddr) WithGroup(string) slog.Handler            { return h }
func (h *servingAddr) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "dedupd serving" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "listen" {
				h.once.Do(func() { h.addr <- a.Value.String() })
			}
			return true
		})
	}
	return nil
}

func linkAttributes(s tracetest.SpanStub) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	for _, l := range s.Links {
		attrs = append(attrs, l.Attributes...)
	}
	return attrs
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, a := range s.Attributes {
		got[string(a.Key)] = a.Value.String()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %s: %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

func names(spans map[string]tracetest.SpanStub) []string {
	var n []string
	for k := range spans {
		n = append(n, k)
	}
	return n
}
