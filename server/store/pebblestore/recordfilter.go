package pebblestore

import (
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// The filter of record keys.
//
// Most claims are of keys never seen, and Pebble answers that a key is
// absent only after looking in every memtable and, for each table that may
// hold it, a bloom filter and an index block: 13% of dedupd's CPU under a
// load of new claims. The directory's lock makes the store this process's
// alone, so the store can keep a filter of every record key it holds and
// skip the read of a key the filter has never seen.
//
// What makes a skipped read safe: a key is added to the filter before the
// batch that gives it a row commits (putRecord). Rows that are deleted keep
// their bits, so the filter fills up; once it has taken more keys than it
// was sized for, it is rebuilt from a snapshot in the background
// (rebuildAt says when). While a rebuild runs, writers add to both
// filters; the rebuild holds every key stripe while it installs the new
// filter and takes its snapshot, so each write either committed before the
// snapshot (the scan finds its row) or adds its key to the new filter.
// Only writers, which hold the key's stripe, consult the filter (see
// readRecord). Until the first build, which starts at Open, every read
// goes to Pebble.
type recordFilter struct {
	maxBytes int64
	// current answers reads once built; next, during a rebuild, is the
	// filter being built.
	current, next atomic.Pointer[keyFilter]
	// rebuildAt is the count of adds to current that starts a rebuild.
	rebuildAt  atomic.Int64
	rebuilding atomic.Bool
	builds     atomic.Int64 // filters installed
	// stop is closed when Close begins; a build in progress then ends
	// within scanCheckEvery keys, and Close waits for it (the build holds
	// the store open, see enter).
	stop     chan struct{}
	stopOnce sync.Once
}

// defaultFilterBytes bounds the filter: 32 MiB holds about 27 million keys
// at its designed rate of false positives. A store with more live keys
// still gets every answer right; more of its claims read Pebble.
const defaultFilterBytes = 32 << 20

// scanCheckEvery is how many keys a build scans between checks of whether
// the store is closing.
const scanCheckEvery = 4096

// mayHoldRecord reports whether the record key k may have a row: false
// only when the filter is built and has never taken k.
func (s *Store) mayHoldRecord(k []byte) bool {
	f := s.filter.current.Load()
	return f == nil || f.mayHold(k)
}

// noteRecord adds k, a key about to get its row, to the filters; the
// caller holds k's stripe and has not yet committed the row.
func (s *Store) noteRecord(k []byte) {
	// A store without a filter (a copy's destination) has neither.
	if n := s.filter.next.Load(); n != nil {
		n.add(k)
	}
	f := s.filter.current.Load()
	if f == nil {
		return
	}
	f.add(k)
	if f.adds.Load() > s.filter.rebuildAt.Load() && s.filter.rebuilding.CompareAndSwap(false, true) {
		s.startFilterBuild(2 * f.adds.Load())
	}
}

// startFilterBuild builds a filter for about capacity keys in the
// background and installs it; s.filter.rebuilding is set.
func (s *Store) startFilterBuild(capacity int64) {
	go func() {
		defer s.filter.rebuilding.Store(false)
		_ = s.buildFilter(capacity) // on failure, the filter in use stays
	}()
}

// buildFilter scans the record keys of a snapshot into a new filter and
// installs it (see recordFilter for why no write is missed).
func (s *Store) buildFilter(capacity int64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	n := newKeyFilter(capacity, s.filter.maxBytes)
	unlock := s.keys.lockEvery()
	s.filter.next.Store(n)
	snap := s.db.NewSnapshot()
	unlock()
	defer snap.Close()
	defer s.filter.next.CompareAndSwap(n, nil)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte{tableRecord}, UpperBound: []byte{tableRecord + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	i := 0
	for valid := it.First(); valid; valid = it.Next() {
		n.add(it.Key())
		if i++; i%scanCheckEvery == 0 && s.closing() {
			return errClosed
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	s.filter.rebuildAt.Store(rebuildAt(n.capacity, n.adds.Load()))
	s.filter.current.Store(n) // before next is cleared: see noteRecord
	s.filter.builds.Add(1)
	return nil
}

// rebuildAt is the count of keys added to a filter of capacity keys, built
// from a scan of scanned keys, at which it is rebuilt: once full, but not
// before the keys added since the scan are half the capacity and as many
// as it scanned. So a rebuild reads at most one key for each key written
// since the last, even in a store with more live keys than the largest
// filter holds, which stays full.
func rebuildAt(capacity, scanned int64) int64 {
	return max(capacity, scanned+max(capacity/2, scanned))
}

// closing reports whether Close has begun.
func (s *Store) closing() bool {
	select {
	case <-s.filter.stop:
		return true
	default:
		return false
	}
}

// startFilter begins the first build of the filter, sized from Pebble's
// estimate of the records' bytes; maxBytes <= 0 leaves the store without
// one.
func (s *Store) startFilter(maxBytes int64) error {
	if maxBytes <= 0 {
		return nil
	}
	s.filter.maxBytes, s.filter.stop = maxBytes, make(chan struct{})
	size, err := s.db.EstimateDiskUsage([]byte{tableRecord}, []byte{tableRecord + 1})
	if err != nil {
		return err
	}
	s.filter.rebuilding.Store(true)
	// A compressed record takes 30 bytes at least on disk.
	s.startFilterBuild(int64(size / 30))
	return nil
}

// stopFilter makes a build in progress end soon; Close then waits for it.
func (s *Store) stopFilter() {
	if s.filter.stop != nil {
		s.filter.stopOnce.Do(func() { close(s.filter.stop) })
	}
}
