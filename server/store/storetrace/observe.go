// Package storetrace observes the store: one Engine decorator (Observe)
// that makes each record and stream operation a span and counts how it
// ended, and the spans of the SQL stores' group-commit batches. A batch
// runs on one caller's goroutine on behalf of many, so its span is a child
// of the first traced caller's span and links to every traced caller's span
// (with that caller's consumer): each caller's trace then shows the batch
// that wrote its call, and the batch shows whom it served.
//
// Spans carry the consumer and the outcome, never keys, stream ids,
// digests, results or error texts (which may quote a key). Both use the
// tracer provider they are given or find in the callers' spans; with none,
// nothing is recorded.
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
	// in_progress, completed, rejected), for a ClaimStream acquired,
	// in_progress or duplicate, for a ClaimParked acquired or none,
	// otherwise "ok", a refusal (lease_lost, not_found, ...) or a failure
	// class (unavailable, ...), as store.Classify names them.
	OutcomeKey = attribute.Key("dedupd.outcome")
	// BatchSizeKey is how many calls a batch wrote or read.
	BatchSizeKey = attribute.Key("dedupd.batch.size")
)

// instrumentation names the tracer of the store spans.
const instrumentation = "github.com/dedupd/dedupd/server/store/storetrace"

// Options say where Observe sends what it sees.
type Options struct {
	// Tracer, when set, records a span "store.<Op.Name>" of every call of
	// a traced operation (store.Op.Traced), a child of the caller's span.
	Tracer trace.TracerProvider
	// Counted, when set, is told how every call of a counted operation
	// (store.Op.Counted) ended, each batch item on its own: the class
	// store.Classify gives its error, and whether that is a failure. It
	// runs on the caller's goroutine, on every call, so it must be cheap.
	Counted func(op store.Op, class string, failed bool, err error)
	// StreamApplied, when set, is told of every stream command that
	// succeeded, with its decision.
	StreamApplied func(cmd store.StreamCommand, d *store.StreamDecision)
}

// Observe wraps e so that every operation is observed as o says: writes
// through the three write methods, named by their command's Op, so that a
// new command is observed with no edit here; reads by the methods below.
// The policy, stats and purge calls (store.Reports) pass through
// unobserved: their errors go back to the operator who made the call, the
// gRPC metrics and spans of that call show them, and the resolvers cache
// the policy reads.
func Observe(e store.Engine, o Options) store.Engine {
	x := &observed{Reports: e, inner: e, o: o}
	if o.Tracer != nil {
		x.tracer = o.Tracer.Tracer(instrumentation)
	}
	return x
}

type observed struct {
	store.Reports
	inner  store.Engine
	o      Options
	tracer trace.Tracer
}

var _ store.Engine = (*observed)(nil)

// start opens op's span when op is traced and a tracer is set.
func (x *observed) start(ctx context.Context, op store.Op, consumer string) (context.Context, trace.Span) {
	if x.tracer == nil || !op.Traced {
		return ctx, nil
	}
	return x.tracer.Start(ctx, "store."+op.Name, //nolint:spancheck // every caller ends it with end()
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(ConsumerKey.String(consumer)))
}

// end is the one place a call's end is classified: it ends the span
// (outcome, when not empty, names a success more precisely than "ok") and
// counts the call.
func (x *observed) end(span trace.Span, op store.Op, outcome string, err error) {
	class, failed := store.Classify(err)
	if span != nil {
		if err != nil || outcome == "" {
			outcome = class
		}
		span.SetAttributes(OutcomeKey.String(outcome))
		if failed {
			span.SetStatus(codes.Error, class)
		}
		span.End()
	}
	x.count(op, class, failed, err)
}

func (x *observed) count(op store.Op, class string, failed bool, err error) {
	if op.Counted && x.o.Counted != nil {
		x.o.Counted(op, class, failed, err)
	}
}

// call observes one read of op.
func call[T any](x *observed, ctx context.Context, op store.Op, consumer string, read func(context.Context) (T, error)) (T, error) {
	ctx, span := x.start(ctx, op, consumer)
	r, err := read(ctx)
	x.end(span, op, "", err)
	return r, err
}

// lower names an outcome as the dedupd_claims_total metric does.
func lower(s string) string { return strings.ToLower(s) }
