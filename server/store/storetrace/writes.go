package storetrace

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

func (x *observed) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	op := cmd.Op()
	var consumer string
	if x.tracer != nil {
		consumer, _ = store.KeyOf(cmd)
	}
	ctx, span := x.start(ctx, op, consumer)
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
		consumer, _ = store.KeyOf(p.Commands[0])
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
	op := cmd.Op()
	var consumer string
	if x.tracer != nil {
		consumer, _ = store.StreamOf(cmd)
	}
	ctx, span := x.start(ctx, op, consumer)
	d, err := x.inner.ApplyStream(ctx, cmd)
	outcome := ""
	if span != nil {
		switch cmd.(type) {
		case store.ClaimStreamParams:
			outcome = lower(d.Outcome.String())
		case store.ClaimParkedParams:
			outcome = "none"
			if d.HandedOut != nil {
				outcome = "acquired"
			}
		}
	}
	x.end(span, op, outcome, err)
	if err == nil && x.o.StreamApplied != nil {
		x.o.StreamApplied(cmd, &d)
	}
	return d, err
}
