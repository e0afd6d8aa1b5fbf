package storetrace

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// Park mode's calls are spans like the other stream calls: the consumer
// and the outcome, never the stream's id. ClaimParked's outcome is
// acquired or none.

func (t *tracedStore) ClaimParked(ctx context.Context, p store.ClaimParkedParams) (store.ParkedClaimResult, error) {
	ctx, span := t.start(ctx, "ClaimParked", p.Consumer)
	r, err := t.inner.ClaimParked(ctx, p)
	outcome := "none"
	if r.Event != nil {
		outcome = "acquired"
	}
	end(span, outcome, err)
	return r, err
}

func (t *tracedStore) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	ctx, span := t.start(ctx, "ListParked", p.Consumer)
	r, err := t.inner.ListParked(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) GetParkedSummary(ctx context.Context, consumer, stream string) (store.ParkedSummary, error) {
	ctx, span := t.start(ctx, "GetParkedSummary", consumer)
	r, err := t.inner.GetParkedSummary(ctx, consumer, stream)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	ctx, span := t.start(ctx, "ListOpenGaps", "")
	r, err := t.inner.ListOpenGaps(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	ctx, span := t.start(ctx, "ParkedTotals", "")
	r, err := t.inner.ParkedTotals(ctx)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) DropParked(ctx context.Context, p store.DropParkedParams) (store.DropParkedResult, error) {
	ctx, span := t.start(ctx, "DropParked", p.Consumer)
	r, err := t.inner.DropParked(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) SkipGap(ctx context.Context, p store.SkipGapParams) (store.SkipGapResult, error) {
	ctx, span := t.start(ctx, "SkipGap", p.Consumer)
	r, err := t.inner.SkipGap(ctx, p)
	end(span, "", err)
	return r, err
}
