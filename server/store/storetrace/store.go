// Package storetrace traces the store: a Store decorator that makes each
// record operation a span, and the spans of the SQL stores' group-commit
// batches. A batch runs on one caller's goroutine on behalf of many, so its
// span is a child of the first traced caller's span and links to every
// traced caller's span (with that caller's consumer): each caller's trace
// then shows the batch that wrote its call, and the batch shows whom it
// served.
//
// Spans carry the consumer and the outcome, never keys, digests, results
// or error texts (which may quote a key). Both use the tracer provider they
// are given or find in the callers' spans; with none, nothing is recorded.
package storetrace

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dedupd/dedupd/server/store"
)

// Attribute keys of dedupd's spans.
const (
	// ConsumerKey is the consumer a call is for.
	ConsumerKey = attribute.Key("dedupd.consumer")
	// OutcomeKey is how a call ended: for a Claim its outcome (acquired,
	// in_progress, completed, rejected), otherwise "ok", a refusal
	// (lease_lost, not_found, ...) or a failure class (unavailable, ...),
	// as store.Classify names them.
	OutcomeKey = attribute.Key("dedupd.outcome")
	// BatchSizeKey is how many calls a group-commit batch wrote.
	BatchSizeKey = attribute.Key("dedupd.batch.size")
)

// instrumentation names the tracer of the store spans.
const instrumentation = "github.com/dedupd/dedupd/server/store/storetrace"

// Store wraps s so that each record and stream operation (Claim, Complete,
// Reject, ExtendLease, Lookup, ListRecords, DeleteRecord, the batch calls
// ApplyBatch and LookupBatch (see calls.go), and their stream counterparts
// (see streams.go)) is a span named "store.<Method>", a child of the
// caller's span, with the consumer and the outcome as attributes. Failures
// set the span's status to Error with their class only: an error's text
// may quote a key. The background and policy calls pass through untraced
// (see passthrough.go).
func Store(s store.Backend, tp trace.TracerProvider) store.Backend {
	return &tracedStore{inner: s, tracer: tp.Tracer(instrumentation)}
}

// tracedStore implements every method itself, without embedding the
// wrapped store, so that a method added to store.Backend must be decided
// here (traced or passed through) before the server compiles.
type tracedStore struct {
	inner  store.Backend
	tracer trace.Tracer
}

var _ store.Backend = (*tracedStore)(nil)

func (t *tracedStore) start(ctx context.Context, method, consumer string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "store."+method, //nolint:spancheck // every caller ends it with end()
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(ConsumerKey.String(consumer)))
}

// end records how the call ended; outcome, when not empty, names a
// success more precisely than "ok".
func end(span trace.Span, outcome string, err error) {
	name, failed := store.Classify(err)
	if err != nil || outcome == "" {
		outcome = name
	}
	span.SetAttributes(OutcomeKey.String(outcome))
	if failed {
		span.SetStatus(codes.Error, name)
	}
	span.End()
}

// claimOutcome names a Claim's outcome as the dedupd_claims_total metric
// does.
func claimOutcome(o store.Outcome) string { return strings.ToLower(o.String()) }

func (t *tracedStore) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	ctx, span := t.start(ctx, "Claim", p.Consumer)
	r, err := t.inner.Claim(ctx, p)
	end(span, claimOutcome(r.Outcome), err)
	return r, err
}

func (t *tracedStore) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	ctx, span := t.start(ctx, "Complete", p.Consumer)
	r, err := t.inner.Complete(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) Reject(ctx context.Context, p store.RejectParams) (store.Record, error) {
	ctx, span := t.start(ctx, "Reject", p.Consumer)
	r, err := t.inner.Reject(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ExtendLease(ctx context.Context, p store.ExtendLeaseParams) (store.Record, error) {
	ctx, span := t.start(ctx, "ExtendLease", p.Consumer)
	r, err := t.inner.ExtendLease(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	ctx, span := t.start(ctx, "Lookup", consumer)
	r, err := t.inner.Lookup(ctx, consumer, key)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	ctx, span := t.start(ctx, "ListRecords", p.Consumer)
	r, err := t.inner.ListRecords(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) DeleteRecord(ctx context.Context, consumer, key string) (store.Record, error) {
	ctx, span := t.start(ctx, "DeleteRecord", consumer)
	r, err := t.inner.DeleteRecord(ctx, consumer, key)
	end(span, "", err)
	return r, err
}
