package claimwait

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// The calls below go to the wrapped store unchanged, each written out so
// that a method added to store.Backend has to be decided here. None of
// them ends a claim's wait: claims and lease extensions keep the key held,
// reads change nothing, and purges and expiry deletes of many keys are
// seen by the waiters' own polls (Options.Poll).

func (n *notifying) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	return n.inner.Claim(ctx, p)
}

func (n *notifying) ExtendLease(ctx context.Context, p store.ExtendLeaseParams) (store.Record, error) {
	return n.inner.ExtendLease(ctx, p)
}

func (n *notifying) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	return n.inner.Lookup(ctx, consumer, key)
}

func (n *notifying) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	return n.inner.LookupBatch(ctx, p)
}

func (n *notifying) DeleteExpired(ctx context.Context, limit int) (int, error) {
	return n.inner.DeleteExpired(ctx, limit)
}

func (n *notifying) Ping(ctx context.Context) error { return n.inner.Ping(ctx) }

// Close closes the wrapped store.
func (n *notifying) Close() error { return n.inner.Close() }

func (n *notifying) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	return n.inner.ListRecords(ctx, p)
}

func (n *notifying) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	return n.inner.PurgeBatch(ctx, p)
}

func (n *notifying) CountPurge(ctx context.Context, p store.PurgeParams) (int64, error) {
	return n.inner.CountPurge(ctx, p)
}

func (n *notifying) Stats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	return n.inner.Stats(ctx, consumer)
}

func (n *notifying) PutPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	return n.inner.PutPolicy(ctx, p)
}

func (n *notifying) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return n.inner.GetPolicy(ctx, consumer)
}

func (n *notifying) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	return n.inner.ListPolicies(ctx)
}

func (n *notifying) DeletePolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return n.inner.DeletePolicy(ctx, consumer)
}

func (n *notifying) ClaimStream(ctx context.Context, p store.ClaimStreamParams) (store.StreamClaimResult, error) {
	return n.inner.ClaimStream(ctx, p)
}

func (n *notifying) ExtendStreamLease(ctx context.Context, p store.ExtendStreamLeaseParams) (store.Stream, error) {
	return n.inner.ExtendStreamLease(ctx, p)
}

func (n *notifying) GetStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	return n.inner.GetStream(ctx, consumer, stream)
}

func (n *notifying) DeleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	return n.inner.DeleteExpiredStreams(ctx, limit)
}

func (n *notifying) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	return n.inner.ListStreams(ctx, p)
}

func (n *notifying) PutStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	return n.inner.PutStreamPolicy(ctx, p)
}

func (n *notifying) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return n.inner.GetStreamPolicy(ctx, consumer)
}

func (n *notifying) DeleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return n.inner.DeleteStreamPolicy(ctx, consumer)
}

func (n *notifying) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return n.inner.InFlightLeases(ctx)
}

func (n *notifying) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return n.inner.PendingLeases(ctx)
}

func (n *notifying) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	return n.inner.StreamStats(ctx, consumer)
}

// The park half: none of these ends an in-flight claim (a ClaimParked
// takes one, DropParked leaves it), so none wakes a waiter.

func (n *notifying) ClaimParked(ctx context.Context, p store.ClaimParkedParams) (store.ParkedClaimResult, error) {
	return n.inner.ClaimParked(ctx, p)
}

func (n *notifying) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	return n.inner.ListParked(ctx, p)
}

func (n *notifying) GetParkedSummary(ctx context.Context, consumer, stream string) (store.ParkedSummary, error) {
	return n.inner.GetParkedSummary(ctx, consumer, stream)
}

func (n *notifying) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	return n.inner.ListOpenGaps(ctx, p)
}

func (n *notifying) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	return n.inner.ParkedTotals(ctx)
}

func (n *notifying) DropParked(ctx context.Context, p store.DropParkedParams) (store.DropParkedResult, error) {
	return n.inner.DropParked(ctx, p)
}
