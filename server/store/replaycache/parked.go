package replaycache

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// Park mode's calls pass through: the cache holds key replays only, and a
// parked event, like every stream write, is decided by the inner store.

func (s *Store) ClaimParked(ctx context.Context, p store.ClaimParkedParams) (store.ParkedClaimResult, error) {
	return s.inner.ClaimParked(ctx, p)
}

func (s *Store) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	return s.inner.ListParked(ctx, p)
}

func (s *Store) GetParkedSummary(ctx context.Context, consumer, stream string) (store.ParkedSummary, error) {
	return s.inner.GetParkedSummary(ctx, consumer, stream)
}

func (s *Store) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	return s.inner.ListOpenGaps(ctx, p)
}

func (s *Store) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	return s.inner.ParkedTotals(ctx)
}

func (s *Store) DropParked(ctx context.Context, p store.DropParkedParams) (store.DropParkedResult, error) {
	return s.inner.DropParked(ctx, p)
}

func (s *Store) SkipGap(ctx context.Context, p store.SkipGapParams) (store.SkipGapResult, error) {
	return s.inner.SkipGap(ctx, p)
}
