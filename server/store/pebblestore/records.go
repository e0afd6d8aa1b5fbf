package pebblestore

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// Apply is every write to one key: under the key's stripe, read the
// record, let store.Apply decide, and commit what it decided with its index
// entries in one synced batch.
func (s *Store) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	consumer, key := store.KeyOf(cmd)
	if err := s.enterFor(ctx); err != nil {
		return store.Decision{}, err
	}
	defer s.leave()
	defer s.keys.lockOne(consumer, key)()
	k := rowKey(tableRecord, consumer, key)
	stored, err := s.readRecord(k, consumer, key)
	if err != nil {
		return store.Decision{}, dbError("reading record", err)
	}
	d, err := store.Apply(stored, cmd, time.Now())
	if err != nil || !d.Write {
		return d, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	s.putRecord(b, k, stored, &d.Record)
	if err := b.Commit(pebble.Sync); err != nil {
		return store.Decision{}, dbError("writing record", err)
	}
	s.commits.Commit(commitmetrics.KindOf(cmd.Op()), 1)
	return d, nil
}

// getRecord reads a record; nil, nil when there is none.
func getRecord(r pebble.Reader, k []byte, consumer, key string) (*store.Record, error) {
	return getRow(r, k, func(v []byte) (*store.Record, error) { return decodeRecord(v, consumer, key) })
}

// readRecord is getRecord of a key, without reading Pebble when the
// filter of record keys has never seen it (recordfilter.go). The caller
// holds the key's stripe: a write of the key that committed before it
// took the stripe was added to the filter it loads.
func (s *Store) readRecord(k []byte, consumer, key string) (*store.Record, error) {
	if !s.mayHoldRecord(k) {
		return nil, nil
	}
	return getRecord(s.db, k, consumer, key)
}

// putRecord adds to b the write of next over old (nil when the key had no
// row), and the changes of the indexes that follow from it. The caller
// holds the key's stripe and commits b after.
func (s *Store) putRecord(b *pebble.Batch, k []byte, old, next *store.Record) {
	if old == nil {
		s.noteRecord(k)
	}
	_ = b.Set(k, encodeRecord(next), nil) // a Batch's Set fails only on a committed batch
	var was time.Time
	if old != nil {
		was = old.ExpiresAt
	}
	moveExpiry(b, tableRecordExpiry, old != nil, was, next.ExpiresAt, next.Consumer, next.Key)
	pending := old != nil && old.State == store.Pending
	moveEntry(b, rowKey(tablePending, next.Consumer, next.Key), pending, next.State == store.Pending,
		pending && old.LeaseExpiresAt.Equal(next.LeaseExpiresAt), appendTime(nil, next.LeaseExpiresAt))
}

// deleteRecord adds to b the deletion of a record's row and index entries.
func deleteRecord(b *pebble.Batch, old *store.Record) {
	_ = b.Delete(rowKey(tableRecord, old.Consumer, old.Key), nil)
	_ = b.SingleDelete(expiryKey(tableRecordExpiry, old.ExpiresAt, old.Consumer, old.Key), nil)
	if old.State == store.Pending {
		_ = b.SingleDelete(rowKey(tablePending, old.Consumer, old.Key), nil)
	}
}

func (s *Store) lookup(ctx context.Context, consumer, key string, at time.Time) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	// Not readRecord: a lookup holds no stripe, and one that loaded the
	// filter just before a rebuild installed the next could test it after
	// a write of its key that only the next one took.
	r, err := getRecord(s.db, rowKey(tableRecord, consumer, key), consumer, key)
	if err != nil {
		return store.Record{}, dbError("reading record", err)
	}
	if !store.IsLive(r, at) {
		return store.Record{}, store.ErrNotFound
	}
	return *r, nil
}
