package storetrace

import (
	"go.opentelemetry.io/otel/trace"

	"context"

	"github.com/dedupd/dedupd/server/store"
)

// The reads are observed as their ops say (store.Ops): spans of the
// callers' reads, counts of the hot path's and the reaper's. The
// reaper's deletes and the health pings are counted, not traced: they run
// on timers with no caller's trace to join.

// LookupBatch is a span "store.LookupBatch" with the batch's size, or
// "store.Lookup" for the lone Lookup; each key counts as a lookup.
func (x *observed) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	op := store.OpLookupBatch
	if p.Single {
		op = store.OpLookup
	}
	ctx, span := x.start(ctx, op, p.Consumer)
	if span != nil && !p.Single {
		span.SetAttributes(BatchSizeKey.Int(len(p.Keys)))
	}
	results := x.inner.LookupBatch(ctx, p)
	switch {
	case span == nil:
	case p.Single && len(results) == 1:
		x.end(span, op, "", results[0].Err)
		return results
	default:
		EndBatch(span, len(results), func(i int) error { return results[i].Err })
	}
	for _, r := range results {
		class, failed := store.Classify(r.Err)
		x.count(store.OpLookup, class, failed, r.Err)
	}
	return results
}

func (x *observed) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	return call(x, ctx, store.OpListRecords, p.Consumer, func(ctx context.Context) ([]store.Record, error) {
		return x.inner.ListRecords(ctx, p)
	})
}

// ReadStream is observed as the typed call it serves (p.Op): a span
// "store.GetStream" counted as get_stream, or "store.GetParkedSummary"
// counted as get_parked_summary when the summary was asked.
func (x *observed) ReadStream(ctx context.Context, p store.ReadStreamParams) (store.StreamRead, error) {
	return call(x, ctx, p.Op(), p.Consumer, func(ctx context.Context) (store.StreamRead, error) {
		return x.inner.ReadStream(ctx, p)
	})
}

func (x *observed) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	return call(x, ctx, store.OpListStreams, p.Consumer, func(ctx context.Context) ([]store.Stream, error) {
		return x.inner.ListStreams(ctx, p)
	})
}

func (x *observed) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	return call(x, ctx, store.OpListParked, p.Consumer, func(ctx context.Context) ([]store.ParkedEvent, error) {
		return x.inner.ListParked(ctx, p)
	})
}

func (x *observed) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	return call(x, ctx, store.OpListOpenGaps, "", func(ctx context.Context) ([]store.OpenGap, error) {
		return x.inner.ListOpenGaps(ctx, p)
	})
}

func (x *observed) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	return call(x, ctx, store.OpParkedTotals, "", x.inner.ParkedTotals)
}

// Reap is counted under the op of its kind, DeleteExpired or
// DeleteExpiredStreams, the labels the reaper's dashboards and alerts
// read; a kind the store does not know is its programming error, passed
// back uncounted.
func (x *observed) Reap(ctx context.Context, kind store.Kind, limit int) (int, error) {
	op, err := store.PickKind(kind, store.OpDeleteExpired, store.OpDeleteExpiredStreams)
	if err != nil {
		return 0, err
	}
	return call(x, ctx, op, "", func(ctx context.Context) (int, error) {
		return x.inner.Reap(ctx, kind, limit)
	})
}

func (x *observed) Ping(ctx context.Context) error {
	_, err := call(x, ctx, store.OpPing, "", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, x.inner.Ping(ctx)
	})
	return err
}

// Close closes the wrapped store.
func (x *observed) Close() error { return x.inner.Close() }

// Store wraps e so that its operations are spans recorded by tp (and not
// counted): Observe with a tracer only, as the typed API.
func Store(e store.Engine, tp trace.TracerProvider) store.Backend {
	return store.NewAPI(Observe(e, Options{Tracer: tp}))
}
