package pgstore_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// TestBatchSpans: with group commit, a traced Claim and Complete are each
// written by a batch whose span is a child of the caller's span, links to
// it with the consumer, and says the batch's size and outcome; an
// untraced call makes no span.
func TestBatchSpans(t *testing.T) {
	s := newStoreWith(t, pgstore.Options{})
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	ctx, caller := tracer.Start(context.Background(), "caller")
	claim, err := s.Claim(ctx, claimParams("traced"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: "traced",
		FencingToken: claim.Record.FencingToken, Result: []byte("r"), Policy: policy}); err != nil {
		t.Fatal(err)
	}
	caller.End()
	if _, err := s.Claim(context.Background(), claimParams("untraced")); err != nil {
		t.Fatal(err)
	}

	var names []string
	for _, span := range spans.Ended() {
		names = append(names, span.Name())
		if span.Name() == "caller" {
			continue
		}
		attrs := map[string]string{}
		for _, a := range span.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
		}
		links := span.Links()
		switch {
		case span.Parent().SpanID() != caller.SpanContext().SpanID():
			t.Errorf("%s: parent %s, want the caller's span", span.Name(), span.Parent().SpanID())
		case len(links) != 1 || links[0].SpanContext.SpanID() != caller.SpanContext().SpanID() ||
			len(links[0].Attributes) != 1 || links[0].Attributes[0].Value.AsString() != "billing":
			t.Errorf("%s: links %v, want one to the caller with consumer billing", span.Name(), links)
		case attrs["dedupd.batch.size"] != "1" || attrs["dedupd.outcome"] != "ok":
			t.Errorf("%s: attributes %v, want size 1 and outcome ok", span.Name(), attrs)
		}
	}
	want := []string{"pgstore.claim_batch", "pgstore.finish_batch", "caller"}
	if len(names) != len(want) || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("spans %v, want %v", names, want)
	}
}
