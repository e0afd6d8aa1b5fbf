package metrics

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// The stream calls of the hot path and the reaper, counted under their own
// op labels, spelled as the store's retries name them ("claim stream"
// becomes "claim_stream") so that the two join on op. Stream refusals
// (SEQUENCE_GAP, MODE_MISMATCH, ...) are answers, as store.Classify says.

func (o *observedStore) ClaimStream(ctx context.Context, p store.ClaimStreamParams) (store.StreamClaimResult, error) {
	r, err := o.inner.ClaimStream(ctx, p)
	o.observe("claim_stream", err)
	return r, err
}

func (o *observedStore) CompleteStream(ctx context.Context, p store.CompleteStreamParams) (store.StreamFinishResult, error) {
	r, err := o.inner.CompleteStream(ctx, p)
	o.observe("complete_stream", err)
	return r, err
}

func (o *observedStore) RejectStream(ctx context.Context, p store.RejectStreamParams) (store.StreamFinishResult, error) {
	r, err := o.inner.RejectStream(ctx, p)
	o.observe("reject_stream", err)
	return r, err
}

func (o *observedStore) ReleaseStream(ctx context.Context, p store.ReleaseStreamParams) (store.Stream, error) {
	r, err := o.inner.ReleaseStream(ctx, p)
	o.observe("release_stream", err)
	return r, err
}

func (o *observedStore) ExtendStreamLease(ctx context.Context, p store.ExtendStreamLeaseParams) (store.Stream, error) {
	r, err := o.inner.ExtendStreamLease(ctx, p)
	o.observe("extend_stream_lease", err)
	return r, err
}

func (o *observedStore) GetStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	r, err := o.inner.GetStream(ctx, consumer, stream)
	o.observe("get_stream", err)
	return r, err
}

func (o *observedStore) DeleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	n, err := o.inner.DeleteExpiredStreams(ctx, limit)
	o.observe("delete_expired_streams", err)
	return n, err
}
