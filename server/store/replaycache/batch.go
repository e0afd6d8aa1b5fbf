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
	results := make([]store.ItemResult, len(p.Commands))
	var (
		rest    []store.Command
		restIdx []int
	)
	now := s.now()
	for i, cmd := range p.Commands {
		c, ok := cmd.(store.ClaimParams)
		if ok {
			if rec, hit := s.cache.get(c.Consumer, c.Key, now); hit {
				if d, answered, err := s.replay(ctx, rec, cmd); answered {
					results[i] = store.ResultOf(d, err)
					continue
				}
			}
		}
		rest = append(rest, cmd)
		restIdx = append(restIdx, i)
	}
	if len(rest) == 0 {
		return results
	}
	since := s.deletions.Load()
	for j, r := range s.inner.ApplyBatch(ctx, store.BatchParams{Commands: rest}) {
		if r.Err == nil {
			s.remember(r.Record, since)
		}
		results[restIdx[j]] = r
	}
	return results
}

// LookupBatch answers cached keys from memory and reads the rest from the
// wrapped store in one batch.
func (s *Store) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := make([]store.LookupResult, len(p.Keys))
	var (
		rest    []string
		restIdx []int
	)
	now := s.now()
	for i, key := range p.Keys {
		if rec, hit := s.cache.get(p.Consumer, key, now); hit {
			results[i] = store.LookupResult{Record: rec, Err: ctx.Err()}
			if results[i].Err != nil {
				results[i].Record = store.Record{}
			}
			continue
		}
		rest = append(rest, key)
		restIdx = append(restIdx, i)
	}
	if len(rest) == 0 {
		return results
	}
	since := s.deletions.Load()
	for j, r := range s.inner.LookupBatch(ctx, store.LookupBatchParams{Consumer: p.Consumer, Keys: rest}) {
		if r.Err == nil {
			s.remember(r.Record, since)
		}
		results[restIdx[j]] = r
	}
	return results
}
