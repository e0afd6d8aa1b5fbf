package storetrace

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// ApplyBatch and LookupBatch are one span each, "store.ApplyBatch" and
// "store.LookupBatch", with the batch's size and its outcome as EndBatch
// names it: "ok" unless an item failed.

func (t *tracedStore) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	consumer := ""
	if len(p.Commands) > 0 {
		consumer, _ = store.KeyOf(p.Commands[0])
	}
	ctx, span := t.start(ctx, "ApplyBatch", consumer)
	span.SetAttributes(BatchSizeKey.Int(len(p.Commands)))
	results := t.inner.ApplyBatch(ctx, p)
	EndBatch(span, len(results), func(i int) error { return results[i].Err })
	return results
}

func (t *tracedStore) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	ctx, span := t.start(ctx, "LookupBatch", p.Consumer)
	span.SetAttributes(BatchSizeKey.Int(len(p.Keys)))
	results := t.inner.LookupBatch(ctx, p)
	EndBatch(span, len(results), func(i int) error { return results[i].Err })
	return results
}
