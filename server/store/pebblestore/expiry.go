package pebblestore

import (
	"bytes"
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
)

// reapChunk is the most rows one reaping batch locks and deletes at once,
// so that the reaper holds few stripes at a time however large its limit.
const reapChunk = 256

// Reap deletes at most limit expired records or streams.
func (s *Store) Reap(ctx context.Context, kind store.Kind, limit int) (int, error) {
	return store.ReapByKind(ctx, kind, limit, s.deleteExpiredRecords, s.deleteExpiredStreams)
}

// deleteExpiredRecords deletes at most limit expired records, found through
// the expiry index.
func (s *Store) deleteExpiredRecords(ctx context.Context, limit int) (int, error) {
	return s.reap(ctx, limit, tableRecordExpiry, &s.keys, func(b *pebble.Batch, consumer, key string, at time.Time) (bool, error) {
		rec, err := getRecord(s.db, rowKey(tableRecord, consumer, key), consumer, key)
		if err != nil || rec == nil || store.IsLive(rec, at) {
			return false, err
		}
		deleteRecord(b, rec)
		return true, nil
	}, nil)
}

// deleteExpiredStreams deletes at most limit expired streams.
func (s *Store) deleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	var freed map[string]int64 // parked bytes the chunk's deletions free, by consumer
	return s.reap(ctx, limit, tableStreamExpiry, &s.streams, func(b *pebble.Batch, consumer, stream string, at time.Time) (bool, error) {
		st, err := getStream(s.db, rowKey(tableStream, consumer, stream), consumer, stream)
		if err != nil || st == nil || store.IsStreamLive(st, at) {
			return false, err
		}
		deleteStream(b, st)
		if st.ParkedBytes != 0 {
			if freed == nil {
				freed = map[string]int64{}
			}
			freed[consumer] += st.ParkedBytes
		}
		return true, nil
	}, func(committed bool) {
		for c, n := range freed {
			if committed {
				s.budgets.add(c, -n)
			}
		}
		freed = nil
	})
}

// expiryEntry is one entry of an expiry index.
type expiryEntry struct {
	key            []byte
	consumer, name string
}

// reap deletes, in chunks, rows whose entry in the expiry index table is at
// or before now: it reads the entries, takes their stripes, and has del
// check each row again under its lock (a write may have renewed it since)
// and add its deletion to the chunk's batch. An entry whose row del does
// not delete is not that row's entry any more (the row is gone, or lives
// on with a later expiry): reapChunk drops it, so that no entry left
// behind can hold its place at the head of the index and stop the reaper.
func (s *Store) reap(ctx context.Context, limit int, table byte, locks *stripes,
	del func(b *pebble.Batch, consumer, name string, at time.Time) (bool, error), after func(committed bool)) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	at, deleted := now(), 0
	for deleted < limit {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		entries, err := s.expired(table, at, min(limit-deleted, reapChunk))
		if err != nil || len(entries) == 0 {
			return deleted, err
		}
		n, err := s.reapChunk(entries, locks, at, del)
		if after != nil {
			after(err == nil && n > 0)
		}
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// expired reads up to n entries of an expiry index at or before at.
func (s *Store) expired(table byte, at time.Time, n int) ([]expiryEntry, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{table}, UpperBound: expiredBound(table, at)})
	if err != nil {
		return nil, dbError("reading expiry index", err)
	}
	defer it.Close()
	var out []expiryEntry
	for ok := it.First(); ok && len(out) < n; ok = it.Next() {
		k := it.Key()
		if len(k) < 9 {
			continue
		}
		c, name, ok := splitTuple(k[9:])
		if !ok {
			continue
		}
		out = append(out, expiryEntry{bytes.Clone(k), c, name})
	}
	if err := it.Error(); err != nil {
		return nil, dbError("reading expiry index", err)
	}
	return out, nil
}

func (s *Store) reapChunk(entries []expiryEntry, locks *stripes, at time.Time,
	del func(b *pebble.Batch, consumer, name string, at time.Time) (bool, error)) (int, error) {
	names := make([][2]string, len(entries))
	for i, e := range entries {
		names[i] = [2]string{e.consumer, e.name}
	}
	defer locks.lockAll(names)()
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	for _, e := range entries {
		ok, err := del(b, e.consumer, e.name, at)
		if err != nil {
			return 0, dbError("reaping", err)
		}
		if ok {
			n++
		} else {
			_ = b.Delete(e.key, nil) // a Delete, not a SingleDelete: what is left behind may have been Set twice
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, dbError("reaping", err)
	}
	return n, nil
}
