package metrics

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// The operators' calls and the policy reads pass through unobserved, each
// written out so that a method added to store.Backend has to be decided
// here. Their errors go back to the operator who made the call, and the
// gRPC metrics count those calls by code; the policy reads are cached by
// the resolvers, so their rate says little about the store.

func (o *observedStore) Close() error { return o.inner.Close() }

func (o *observedStore) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	return o.inner.ListRecords(ctx, p)
}

func (o *observedStore) DeleteRecord(ctx context.Context, consumer, key string) (store.Record, error) {
	return o.inner.DeleteRecord(ctx, consumer, key)
}

func (o *observedStore) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	return o.inner.PurgeBatch(ctx, p)
}

func (o *observedStore) CountPurge(ctx context.Context, p store.PurgeParams) (int64, error) {
	return o.inner.CountPurge(ctx, p)
}

func (o *observedStore) Stats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	return o.inner.Stats(ctx, consumer)
}

func (o *observedStore) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	return o.inner.StreamStats(ctx, consumer)
}

func (o *observedStore) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return o.inner.PendingLeases(ctx)
}

func (o *observedStore) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return o.inner.InFlightLeases(ctx)
}

func (o *observedStore) PutPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	return o.inner.PutPolicy(ctx, p)
}

func (o *observedStore) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return o.inner.GetPolicy(ctx, consumer)
}

func (o *observedStore) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	return o.inner.ListPolicies(ctx)
}

func (o *observedStore) DeletePolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return o.inner.DeletePolicy(ctx, consumer)
}

func (o *observedStore) ResetStream(ctx context.Context, p store.ResetStreamParams) (store.Stream, error) {
	return o.inner.ResetStream(ctx, p)
}

func (o *observedStore) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	return o.inner.ListStreams(ctx, p)
}

func (o *observedStore) PutStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	return o.inner.PutStreamPolicy(ctx, p)
}

func (o *observedStore) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return o.inner.GetStreamPolicy(ctx, consumer)
}

func (o *observedStore) DeleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return o.inner.DeleteStreamPolicy(ctx, consumer)
}
