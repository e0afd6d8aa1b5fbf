package metrics

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// Park mode's store calls, counted under their own op labels as the other
// stream calls are. ErrParkFull and ErrNoGap are answers (store.Classify).

func (o *observedStore) ClaimParked(ctx context.Context, p store.ClaimParkedParams) (store.ParkedClaimResult, error) {
	r, err := o.inner.ClaimParked(ctx, p)
	o.observe("claim_parked", err)
	return r, err
}

func (o *observedStore) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	r, err := o.inner.ListParked(ctx, p)
	o.observe("list_parked", err)
	return r, err
}

func (o *observedStore) GetParkedSummary(ctx context.Context, consumer, stream string) (store.ParkedSummary, error) {
	r, err := o.inner.GetParkedSummary(ctx, consumer, stream)
	o.observe("get_parked_summary", err)
	return r, err
}

func (o *observedStore) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	r, err := o.inner.ListOpenGaps(ctx, p)
	o.observe("list_open_gaps", err)
	return r, err
}

func (o *observedStore) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	r, err := o.inner.ParkedTotals(ctx)
	o.observe("parked_totals", err)
	return r, err
}

func (o *observedStore) DropParked(ctx context.Context, p store.DropParkedParams) (store.DropParkedResult, error) {
	r, err := o.inner.DropParked(ctx, p)
	o.observe("drop_parked", err)
	return r, err
}

func (o *observedStore) SkipGap(ctx context.Context, p store.SkipGapParams) (store.SkipGapResult, error) {
	r, err := o.inner.SkipGap(ctx, p)
	o.observe("skip_gap", err)
	return r, err
}
