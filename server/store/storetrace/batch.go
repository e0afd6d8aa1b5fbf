package storetrace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dedupd/dedupd/server/store"
)

// StartBatch starts the span name for a batch of n calls, where caller(i) is
// call i's context and consumer, and returns ctx carrying it. With no
// traced caller the span is the no-op one and ctx is returned as is.
func StartBatch(ctx context.Context, name string, n int, caller func(i int) (context.Context, string)) (context.Context, trace.Span) {
	var parent trace.Span
	var links []trace.Link
	for i := range n {
		callerCtx, consumer := caller(i)
		span := trace.SpanFromContext(callerCtx)
		if !span.SpanContext().IsValid() {
			continue
		}
		if parent == nil {
			parent = span
		}
		links = append(links, trace.Link{
			SpanContext: span.SpanContext(),
			Attributes:  []attribute.KeyValue{ConsumerKey.String(consumer)},
		})
	}
	if parent == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return parent.TracerProvider().Tracer(instrumentation).Start(trace.ContextWithSpan(ctx, parent), name, //nolint:spancheck // EndBatch ends it
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithLinks(links...),
		trace.WithAttributes(BatchSizeKey.Int(n)))
}

// EndBatch ends a batch's span with its outcome: "ok" when no call failed, else
// the failure class (store.Classify) of the first call that did, which
// also sets the span's status to Error. Refusals are answers, not failures.
func EndBatch(span trace.Span, n int, errOf func(i int) error) {
	if !span.IsRecording() {
		return
	}
	outcome := "ok"
	for i := range n {
		if class, failed := store.Classify(errOf(i)); failed {
			outcome = class
			span.SetStatus(codes.Error, class)
			break
		}
	}
	span.SetAttributes(OutcomeKey.String(outcome))
	span.End()
}
