package server

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestStreamCallsGoThroughTheDecorators runs the real server and makes
// one ClaimStream: the handler must reach the store through the decorated
// stack Run builds (tracing over metrics over the replay cache), so a
// store.ClaimStream span is a child of the server's span. The stream's id
// is in no attribute.
func TestStreamCallsGoThroughTheDecorators(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	const method = "dedup.v1.StreamService/ClaimStream"
	serverSpan := &spanEnded{name: method, kind: trace.SpanKindServer, ended: make(chan struct{})}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSpanProcessor(serverSpan))
	cfg := testConfig()
	cfg.DataDir = t.TempDir()
	cfg.TracerProvider = tp
	cfg.ReplayCacheBytes, cfg.ReplayCacheTTL = 1<<20, time.Minute
	addr := runInProcess(t, cfg)

	conn := dialServer(t, addr)
	const stream = "stream-id-never-traced"
	resp, err := dedupv1.NewStreamServiceClient(conn).ClaimStream(context.Background(),
		&dedupv1.ClaimStreamRequest{Consumer: "billing", Stream: stream, Sequence: 1, Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED {
		t.Fatalf("outcome %v, want acquired", resp.GetOutcome())
	}
	select {
	case <-serverSpan.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the server span never ended")
	}
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byName[s.Name+"/"+s.SpanKind.String()] = s
		for _, a := range s.Attributes {
			if a.Value.String() == stream {
				t.Errorf("span %s attribute %s carries the stream's id", s.Name, a.Key)
			}
		}
	}
	server, ok := byName[method+"/server"]
	storeSpan, traced := byName["store.ClaimStream/internal"]
	if !ok || !traced {
		t.Fatalf("spans %v; want the server span and a store.ClaimStream span", names(byName))
	}
	if storeSpan.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("store.ClaimStream's parent is %s, want the server span", storeSpan.Parent.SpanID())
	}
	wantAttrs(t, storeSpan, map[string]string{"dedupd.consumer": "billing", "dedupd.outcome": "acquired"})
}
