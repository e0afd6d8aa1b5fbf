package replaycache

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// The calls below go to the wrapped store unchanged; each is written out so
// that a method added to store.Backend has to be decided here.
//
// None of them can make a cached record wrong: ExtendLease never finishes
// a key, DeleteExpired removes only records past the ExpiresAt the cache
// already stops at, and the rest only read records or touch policies.
//
// Streams are not cached. Only a DUPLICATE (a sequence at or below the
// high-water mark) could be answered from memory, and not faithfully: a
// claim's answer carries the stream as it is now, and unlike a finished
// key's record the stream row changes with every event (mark, in-flight
// sequence, fencing token, expiry), so a cached answer would show a
// stream that has since moved on. Keeping the entry current would mean
// repeating ApplyStream's rules here on every write, and ResetStream may
// lower the mark on any server sharing the database, after which a cached
// DUPLICATE would skip events that must run again. A stream claim is one
// row's compare-and-set that mostly acquires the next sequence, so there
// is little to win.

func (s *Store) ExtendLease(ctx context.Context, p store.ExtendLeaseParams) (store.Record, error) {
	return s.inner.ExtendLease(ctx, p)
}

func (s *Store) DeleteExpired(ctx context.Context, limit int) (int, error) {
	return s.inner.DeleteExpired(ctx, limit)
}

func (s *Store) Ping(ctx context.Context) error { return s.inner.Ping(ctx) }

// Close closes the wrapped store.
func (s *Store) Close() error { return s.inner.Close() }

func (s *Store) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	return s.inner.ListRecords(ctx, p)
}

func (s *Store) CountPurge(ctx context.Context, p store.PurgeParams) (int64, error) {
	return s.inner.CountPurge(ctx, p)
}

func (s *Store) Stats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	return s.inner.Stats(ctx, consumer)
}

func (s *Store) PutPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	return s.inner.PutPolicy(ctx, p)
}

func (s *Store) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return s.inner.GetPolicy(ctx, consumer)
}

func (s *Store) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	return s.inner.ListPolicies(ctx)
}

func (s *Store) DeletePolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return s.inner.DeletePolicy(ctx, consumer)
}

func (s *Store) ClaimStream(ctx context.Context, p store.ClaimStreamParams) (store.StreamClaimResult, error) {
	return s.inner.ClaimStream(ctx, p)
}

func (s *Store) CompleteStream(ctx context.Context, p store.CompleteStreamParams) (store.StreamFinishResult, error) {
	return s.inner.CompleteStream(ctx, p)
}

func (s *Store) RejectStream(ctx context.Context, p store.RejectStreamParams) (store.StreamFinishResult, error) {
	return s.inner.RejectStream(ctx, p)
}

func (s *Store) ReleaseStream(ctx context.Context, p store.ReleaseStreamParams) (store.Stream, error) {
	return s.inner.ReleaseStream(ctx, p)
}

func (s *Store) ExtendStreamLease(ctx context.Context, p store.ExtendStreamLeaseParams) (store.Stream, error) {
	return s.inner.ExtendStreamLease(ctx, p)
}

func (s *Store) GetStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	return s.inner.GetStream(ctx, consumer, stream)
}

func (s *Store) DeleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	return s.inner.DeleteExpiredStreams(ctx, limit)
}

func (s *Store) ResetStream(ctx context.Context, p store.ResetStreamParams) (store.Stream, error) {
	return s.inner.ResetStream(ctx, p)
}

func (s *Store) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	return s.inner.ListStreams(ctx, p)
}

func (s *Store) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	return s.inner.StreamStats(ctx, consumer)
}

func (s *Store) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.inner.PendingLeases(ctx)
}

func (s *Store) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.inner.InFlightLeases(ctx)
}

func (s *Store) PutStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	return s.inner.PutStreamPolicy(ctx, p)
}

func (s *Store) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return s.inner.GetStreamPolicy(ctx, consumer)
}

func (s *Store) DeleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return s.inner.DeleteStreamPolicy(ctx, consumer)
}
