package replaycache

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// ApplyBatch answers the claims of cached finished keys from memory, as
// Apply does, and sends every other command to the wrapped store in one
// batch, caching the finished records it returns. Answering a cached claim
// before the rest of the batch keeps the batch order on its key: a finished
// record does not change, so every command on that key before the claim
// left it as it is.
func (s *Store) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	now := s.now()
	return cachedOrInner(s, p.Commands, func(cmd store.Command) (store.ItemResult, bool) {
		c, ok := cmd.(store.ClaimParams)
		if !ok {
			return store.ItemResult{}, false
		}
		rec, hit := s.cache.get(c.Consumer, c.Key, now)
		if !hit {
			return store.ItemResult{}, false
		}
		d, answered, err := s.replay(ctx, rec, cmd)
		return store.ResultOf(d, err), answered
	}, func(rest []store.Command) []store.ItemResult {
		return s.inner.ApplyBatch(ctx, store.BatchParams{Commands: rest})
	}, func(r store.ItemResult) (store.Record, bool) { return r.Record, r.Err == nil })
}

// LookupBatch answers cached keys from memory and reads the rest from the
// wrapped store in one batch.
func (s *Store) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	now := s.now()
	return cachedOrInner(s, p.Keys, func(key string) (store.LookupResult, bool) {
		rec, hit := s.cache.get(p.Consumer, key, now)
		if !hit {
			return store.LookupResult{}, false
		}
		if err := ctx.Err(); err != nil {
			return store.LookupResult{Err: err}, true
		}
		return store.LookupResult{Record: rec}, true
	}, func(rest []string) []store.LookupResult {
		return s.inner.LookupBatch(ctx, store.LookupBatchParams{Consumer: p.Consumer, Keys: rest})
	}, func(r store.LookupResult) (store.Record, bool) { return r.Record, r.Err == nil })
}

// cachedOrInner answers each of items that answer can from the cache and
// sends the rest to inner in one call, remembering each record it returns
// without error (recordOf); the results keep the items' order.
func cachedOrInner[I, R any](s *Store, items []I, answer func(I) (R, bool),
	inner func(rest []I) []R, recordOf func(R) (store.Record, bool)) []R {
	results := make([]R, len(items))
	var (
		rest    []I
		restIdx []int
	)
	for i, item := range items {
		if r, answered := answer(item); answered {
			results[i] = r
			continue
		}
		rest = append(rest, item)
		restIdx = append(restIdx, i)
	}
	if len(rest) == 0 {
		return results
	}
	since := s.deletions.Load()
	for j, r := range inner(rest) {
		if rec, ok := recordOf(r); ok {
			s.remember(rec, since)
		}
		results[restIdx[j]] = r
	}
	return results
}
