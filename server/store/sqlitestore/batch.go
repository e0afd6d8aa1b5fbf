package sqlitestore

import (
	"context"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// ApplyBatch runs the commands in one transaction on the write connection,
// in batch order, so each sees the writes of those before it; one commit
// (one fsync with synchronous=FULL) acknowledges them all. With group
// commit on, the batch queues as one call and shares its transaction with
// the calls (lone or batches) queued beside it. As in group commit, a
// command whose read or write the database fails gets that error alone,
// and the transaction runs again without it.
func (s *Store) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := make([]store.ItemResult, len(p.Commands))
	if len(p.Commands) == 0 {
		return results
	}
	if s.closed.Load() {
		return store.FailedBatch(len(p.Commands), errClosed)
	}
	writes, queue := make([]keyWrite, len(p.Commands)), make([]queued, len(p.Commands))
	for i, cmd := range p.Commands {
		consumer, key := store.KeyOf(cmd)
		writes[i] = keyWrite{queueEntry: queueEntry{ctx: ctx, consumer: consumer}, key: key, cmd: cmd}
		queue[i] = &writes[i]
	}
	if s.w.maxBatch > 1 {
		s.w.runQueued(ctx, queue)
	} else {
		if err := s.w.acquire(ctx); err != nil {
			return store.FailedBatch(len(p.Commands), err)
		}
		s.w.runCommands(queue)
		s.w.release()
	}
	for i, k := range writes {
		results[i] = store.ResultOf(k.d, k.err)
	}
	return results
}

// LookupBatch reads each key from the read pool.
func (s *Store) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := make([]store.LookupResult, len(p.Keys))
	now := store.Now(time.Now())
	for i, key := range p.Keys {
		if s.closed.Load() {
			results[i].Err = errClosed
			continue
		}
		results[i].Record, results[i].Err = s.r.lookup(ctx, p.Consumer, key, now)
	}
	return results
}
