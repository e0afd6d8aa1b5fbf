package pebblestore

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
)

// ListRecords lists live records in key order. A listing of expired leases
// walks the index of Pending records, not the whole consumer.
func (s *Store) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return listRows(s, ctx, listing[store.Record]{Op: "list records", Rows: tableRecord, Leases: tablePending,
		ByLease: p.LeaseExpired, Consumer: p.Consumer, After: p.AfterKey, Prefix: p.KeyPrefix, Limit: p.Limit,
		Decode: decodeRecord, Keep: p.Matches})
}

// purgeRetries bounds how often Purge reads candidates again when
// every one it found changed under it before it could lock them.
const purgeRetries = 5

// Purge deletes at most p.Limit matching records in one synced batch (it
// finds candidates, takes their stripes, and deletes those that still
// match), or counts every matching record.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	if p.CountOnly {
		var n int64
		err := s.eachPurgeCandidate(ctx, p, now(), func(*store.Record) bool { n++; return true })
		return n, err
	}
	for range purgeRetries {
		at := now()
		var names [][2]string
		err := s.eachPurgeCandidate(ctx, p, at, func(r *store.Record) bool {
			names = append(names, [2]string{r.Consumer, r.Key})
			return len(names) < p.Limit
		})
		if err != nil || len(names) == 0 {
			return 0, err
		}
		n, err := s.purgeNames(names, p, at)
		if err != nil || n > 0 {
			return int64(n), err
		}
	}
	return 0, nil
}

func (s *Store) purgeNames(names [][2]string, p store.PurgeParams, at time.Time) (int, error) {
	defer s.keys.lockAll(names)()
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	for _, name := range names {
		rec, err := getRecord(s.db, rowKey(tableRecord, name[0], name[1]), name[0], name[1])
		if err != nil {
			return 0, dbError("purging records", err)
		}
		if rec != nil && p.Matches(rec, at) {
			deleteRecord(b, rec)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, dbError("purging records", err)
	}
	return n, nil
}

// eachPurgeCandidate calls fn with each record p selects, until fn says to
// stop: a consumer's records from its range, or, across consumers (only
// expired ones may be purged so), those the expiry index lists.
func (s *Store) eachPurgeCandidate(ctx context.Context, p store.PurgeParams, at time.Time, fn func(*store.Record) bool) error {
	var err error
	if p.Consumer != "" {
		err = s.scanConsumer(ctx, tableRecord, p.Consumer, "", func(key string, v []byte) (bool, error) {
			rec, err := decodeRecord(v, p.Consumer, key)
			if err != nil || !p.Matches(rec, at) {
				return err == nil, err
			}
			return fn(rec), nil
		})
	} else {
		err = s.iterate(ctx, []byte{tableRecordExpiry}, expiredBound(tableRecordExpiry, at), func(k, _ []byte) (bool, error) {
			c, key, ok := splitTuple(k[9:])
			if !ok {
				return true, nil
			}
			rec, err := getRecord(s.db, rowKey(tableRecord, c, key), c, key)
			if err != nil || rec == nil || !p.Matches(rec, at) {
				return err == nil, err
			}
			return fn(rec), nil
		})
	}
	if err != nil {
		return dbError("selecting records to purge", err)
	}
	return nil
}

// StatsOf counts the records or the streams of a consumer, or of all.
func (s *Store) StatsOf(ctx context.Context, kind store.Kind, consumer string) (store.KindStats, error) {
	return store.StatsByKind(ctx, kind, consumer, s.keyStats, s.streamStats)
}

// keyStats counts records per consumer in one pass over their rows.
func (s *Store) keyStats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	lower, upper := []byte{tableRecord}, []byte{tableRecord + 1}
	if consumer != "" {
		lower = consumerPrefix(tableRecord, consumer)
		upper = prefixEnd(lower)
	}
	at := now()
	var out []store.ConsumerStats
	err := s.iterate(ctx, lower, upper, func(k, v []byte) (bool, error) {
		c, key, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		rec, err := decodeRecord(v, c, key)
		if err != nil {
			return false, err
		}
		if len(out) == 0 || out[len(out)-1].Consumer != c {
			out = append(out, store.ConsumerStats{Consumer: c})
		}
		out[len(out)-1].Count(rec, at)
		return true, nil
	})
	if err != nil {
		return nil, dbError("stats", err)
	}
	return out, nil
}
