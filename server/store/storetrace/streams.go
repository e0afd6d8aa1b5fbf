package storetrace

import (
	"context"
	"strings"

	"github.com/dedupd/dedupd/server/store"
)

// The stream calls are spans as the record calls are: "store.ClaimStream"
// and so on, with the consumer and the outcome, never the stream's id,
// which may name an entity as a key does. A ClaimStream's outcome is
// acquired, in_progress or duplicate.

func (t *tracedStore) ClaimStream(ctx context.Context, p store.ClaimStreamParams) (store.StreamClaimResult, error) {
	ctx, span := t.start(ctx, "ClaimStream", p.Consumer)
	r, err := t.inner.ClaimStream(ctx, p)
	end(span, strings.ToLower(r.Outcome.String()), err)
	return r, err
}

func (t *tracedStore) CompleteStream(ctx context.Context, p store.CompleteStreamParams) (store.StreamFinishResult, error) {
	ctx, span := t.start(ctx, "CompleteStream", p.Consumer)
	r, err := t.inner.CompleteStream(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) RejectStream(ctx context.Context, p store.RejectStreamParams) (store.StreamFinishResult, error) {
	ctx, span := t.start(ctx, "RejectStream", p.Consumer)
	r, err := t.inner.RejectStream(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ReleaseStream(ctx context.Context, p store.ReleaseStreamParams) (store.Stream, error) {
	ctx, span := t.start(ctx, "ReleaseStream", p.Consumer)
	r, err := t.inner.ReleaseStream(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ExtendStreamLease(ctx context.Context, p store.ExtendStreamLeaseParams) (store.Stream, error) {
	ctx, span := t.start(ctx, "ExtendStreamLease", p.Consumer)
	r, err := t.inner.ExtendStreamLease(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) GetStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	ctx, span := t.start(ctx, "GetStream", consumer)
	r, err := t.inner.GetStream(ctx, consumer, stream)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ResetStream(ctx context.Context, p store.ResetStreamParams) (store.Stream, error) {
	ctx, span := t.start(ctx, "ResetStream", p.Consumer)
	r, err := t.inner.ResetStream(ctx, p)
	end(span, "", err)
	return r, err
}

func (t *tracedStore) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	ctx, span := t.start(ctx, "ListStreams", p.Consumer)
	r, err := t.inner.ListStreams(ctx, p)
	end(span, "", err)
	return r, err
}
