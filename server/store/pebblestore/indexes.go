package pebblestore

import (
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Index entries ('e', 'p', 'x', 'q', 'w') live for as long as their row is
// in one state, often a second or less (a claim's 'p' entry lasts until its
// Complete), and each is written once and deleted once. So they are
// deleted with SingleDelete, not Delete: a SingleDelete and the Set it
// deletes cancel out where they meet, in the flush of the memtable that
// holds both, and neither reaches a table. A Delete would leave a tombstone
// that every flush and compaction rewrites until it reaches the bottom
// level: in a cycle of claim and complete, two of the four entries a
// cycle flushed were tombstones, and the tables took 825 bytes a cycle
// against 651 without them (BenchmarkCycle's table-B/op).
//
// SingleDelete deletes only the newest Set of its key: an older Set of the
// same key would come back. So the one rule here is that an entry is never
// Set over itself:
//   - an expiry entry's key holds its time, and is Set only when the row
//     gets that expiry, so the key is new (moveExpiry);
//   - a lease entry's value is the lease, which changes while the entry
//     lives: it is rewritten as a Delete and then a Set (moveEntry), and a
//     Delete hides every older Set;
//   - entries a dedupd before this rule Set over themselves are rewritten
//     once, at Open (settleLeaseEntries).
//
// Pebble reports a SingleDelete that met two Sets (PossibleAPIMisuse);
// pebbleOptions logs it, and TestIndexesMatchRows and
// TestOpenSettlesLeaseEntriesSetOverThemselves fail on it.

// moveExpiry adds to b the change of a row's expiry entry in table, from
// was (had: the row existed) to next.
func moveExpiry(b *pebble.Batch, table byte, had bool, was, next time.Time, consumer, name string) {
	if had && was.Equal(next) {
		return
	}
	if had {
		_ = b.SingleDelete(expiryKey(table, was, consumer, name), nil) // a Batch's writes fail only once it is committed
	}
	_ = b.Set(expiryKey(table, next, consumer, name), nil, nil)
}

// moveEntry adds to b the change of the entry k of an index of rows in
// flight ('p', 'q', 'w'): from present (had) to present with value (holds);
// same says the value has not changed.
func moveEntry(b *pebble.Batch, k []byte, had, holds, same bool, value []byte) {
	switch {
	case holds && had && same:
	case holds:
		if had {
			_ = b.Delete(k, nil)
		}
		_ = b.Set(k, value, nil)
	case had:
		_ = b.SingleDelete(k, nil)
	}
}

// settledKey marks a store whose lease entries follow the rule above.
var settledKey = []byte{tableMeta, 's', 'e', 't', 't', 'l', 'e', 'd'}

// settleLeaseEntries rewrites each entry of the indexes of rows in flight
// ('p', 'q') as a Delete and a Set, once per store: a dedupd before the
// rule above Set them over themselves when a lease moved. Expiry and 'w'
// entries never were. In flight means few entries, and a crash before the
// mark only does it again.
func settleLeaseEntries(db *pebble.DB) error {
	switch _, closer, err := db.Get(settledKey); {
	case err == nil:
		return closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return err
	}
	for _, table := range []byte{tablePending, tableStreamPending} {
		if err := rewriteEntries(db, table); err != nil {
			return err
		}
	}
	return db.Set(settledKey, nil, pebble.Sync)
}

func rewriteEntries(db *pebble.DB, table byte) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{table}, UpperBound: []byte{table + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	b := db.NewBatch()
	defer func() { _ = b.Close() }()
	for ok := it.First(); ok; ok = it.Next() {
		_ = b.Delete(it.Key(), nil)
		_ = b.Set(it.Key(), it.Value(), nil)
		if b.Len() >= 4<<20 {
			if err := b.Commit(pebble.Sync); err != nil {
				return err
			}
			_ = b.Close()
			b = db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}
