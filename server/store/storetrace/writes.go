package storetrace

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/dedupd/dedupd/server/store"
)

// command is what the observer needs of a key or stream command.
type command interface {
	Op() store.Op
	Target() (consumer, name string)
}

// startCommand opens the span of cmd's op, with the consumer it writes.
func (x *observed) startCommand(ctx context.Context, cmd command) (context.Context, trace.Span, store.Op) {
	op := cmd.Op()
	if x.tracer == nil {
		return ctx, nil, op
	}
	consumer, _ := cmd.Target()
	ctx, span := x.start(ctx, op, consumer)
	return ctx, span, op
}

func (x *observed) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	ctx, span, op := x.startCommand(ctx, cmd)
	d, err := x.inner.Apply(ctx, cmd)
	outcome := ""
	if _, claim := cmd.(store.ClaimParams); claim && span != nil {
		outcome = lower(d.Outcome.String())
	}
	x.end(span, op, outcome, err)
	return d, err
}

// ApplyBatch is one span, "store.ApplyBatch", with the batch's size and
// its outcome as EndBatch names it; each item is counted under its own
// command's op, as its lone call would be.
func (x *observed) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	consumer := ""
	if len(p.Commands) > 0 {
		consumer, _ = p.Commands[0].Target()
	}
	ctx, span := x.start(ctx, store.OpApplyBatch, consumer)
	if span != nil {
		span.SetAttributes(BatchSizeKey.Int(len(p.Commands)))
	}
	results := x.inner.ApplyBatch(ctx, p)
	if span != nil {
		EndBatch(span, len(results), func(i int) error { return results[i].Err })
	}
	for i, r := range results {
		class, failed := store.Classify(r.Err)
		x.count(p.Commands[i].Op(), class, failed, r.Err)
	}
	return results
}

// ApplyStream observes a stream command as its op; a stream's id is never
// an attribute, as it may name an entity as a key does.
func (x *observed) ApplyStream(ctx context.Context, cmd store.StreamCommand) (store.StreamDecision, error) {
	ctx, span, op := x.startCommand(ctx, cmd)
	d, err := x.inner.ApplyStream(ctx, cmd)
	x.end(span, op, streamOutcome(span, cmd, &d), err)
	if err == nil && x.o.StreamApplied != nil {
		x.o.StreamApplied(cmd, &d)
	}
	return d, err
}

// streamOutcome names a stream claim's success more precisely than "ok":
// acquired, in_progress or duplicate; a ClaimParked's acquired or none.
func streamOutcome(span trace.Span, cmd store.StreamCommand, d *store.StreamDecision) string {
	if span == nil {
		return ""
	}
	switch cmd.(type) {
	case store.ClaimStreamParams:
		return lower(d.Outcome.String())
	case store.ClaimParkedParams:
		if d.HandedOut != nil {
			return "acquired"
		}
		return "none"
	}
	return ""
}
