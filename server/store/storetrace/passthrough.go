package storetrace

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// The calls below are not traced, each written out so that a method added
// to store.Backend has to be decided here. The reaper's deletes and the
// health pings run on timers with no caller's trace to join, so each would
// be a trace of its own every few seconds; the rest are operators' rare
// purges and counts and the policy reads that the resolvers cache, which
// the gRPC spans of their calls already show.

func (t *tracedStore) DeleteExpired(ctx context.Context, limit int) (int, error) {
	return t.inner.DeleteExpired(ctx, limit)
}

func (t *tracedStore) DeleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	return t.inner.DeleteExpiredStreams(ctx, limit)
}

func (t *tracedStore) Ping(ctx context.Context) error { return t.inner.Ping(ctx) }

func (t *tracedStore) Close() error { return t.inner.Close() }

func (t *tracedStore) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	return t.inner.PurgeBatch(ctx, p)
}

func (t *tracedStore) CountPurge(ctx context.Context, p store.PurgeParams) (int64, error) {
	return t.inner.CountPurge(ctx, p)
}

func (t *tracedStore) Stats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	return t.inner.Stats(ctx, consumer)
}

func (t *tracedStore) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	return t.inner.StreamStats(ctx, consumer)
}

func (t *tracedStore) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return t.inner.PendingLeases(ctx)
}

func (t *tracedStore) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return t.inner.InFlightLeases(ctx)
}

func (t *tracedStore) PutPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	return t.inner.PutPolicy(ctx, p)
}

func (t *tracedStore) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return t.inner.GetPolicy(ctx, consumer)
}

func (t *tracedStore) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	return t.inner.ListPolicies(ctx)
}

func (t *tracedStore) DeletePolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return t.inner.DeletePolicy(ctx, consumer)
}

func (t *tracedStore) PutStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	return t.inner.PutStreamPolicy(ctx, p)
}

func (t *tracedStore) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return t.inner.GetStreamPolicy(ctx, consumer)
}

func (t *tracedStore) DeleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return t.inner.DeleteStreamPolicy(ctx, consumer)
}
