// Package pebblestore is the embedded store.Backend on Pebble, CockroachDB's
// storage engine: an ordered key-value store with a write-ahead log whose
// commit pipeline lets many writers share one fsync while each still waits
// for its own to reach the disk.
//
// Like sqlitestore it serves one process on one machine: an exclusive lock
// on dataDir/LOCK (the same file sqlitestore takes) keeps a second dedupd
// off the directory, which is what makes the local clock a safe store
// clock. The data lives in dataDir/pebble; the layout of its keys is in
// keys.go and its versioning in format.go.
//
// Every write is a read, a decision by store.Apply (or store.ApplyStream),
// and one batch committed with pebble.Sync, made atomic per key by a
// striped lock held from the read until the commit returns (locks.go).
// Reads take no lock: Pebble publishes a batch only once its commit is
// durable, so a read sees every write acknowledged before it started.
package pebblestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/gofrs/flock"

	"github.com/dedupd/dedupd/internal/datadir"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// ErrLocked is returned by Open when another process, or another store in
// this one (of either embedded engine), holds the data directory.
var ErrLocked = datadir.ErrLocked

// Options tune the store; the zero value is the default.
type Options struct {
	// CacheBytes is the block cache; zero means 64 MiB.
	CacheBytes int64
	// Commits, when set, records every commit and every sync of the
	// write-ahead log (commits.go).
	Commits *commitmetrics.Recorder

	// filterBytes bounds the filter of record keys (recordfilter.go):
	// zero means defaultFilterBytes, negative none.
	filterBytes int64
	// memTableBytes, when set, is Pebble's memtable size instead of its
	// default (4 MiB): tests make writes outrun flushes with a small one.
	memTableBytes uint64
	// fs, when set, is the file system under Pebble instead of the
	// operating system's: tests put a failing disk there (diskfail_test.go).
	fs vfs.FS
}

// Store is the embedded store.Backend on Pebble. Its methods are safe for
// concurrent use.
type Store struct {
	// API is the typed contract, derived from this engine.
	*store.API
	store.PolicyKinds

	dir  string
	lock *flock.Flock
	db   *pebble.DB

	// open is read-held by every call for as long as it uses db, and
	// write-held by Close, so that Close waits for the calls in flight and
	// no call reaches a closed db (Pebble panics on that).
	open   sync.RWMutex
	closed bool

	commits *commitmetrics.Recorder

	keys    stripes
	streams stripes
	// budgets are the consumers' parked bytes (budgets.go).
	budgets parkBudgets
	// policyMu makes DeletePolicy's read and delete one step.
	policyMu sync.Mutex
	// filter lets a claim of a new key skip its read (recordfilter.go).
	filter recordFilter
	// events counts what Pebble reports of itself (events.go).
	events *engineEvents
}

var (
	_ store.Engine  = (*Store)(nil)
	_ store.Backend = (*Store)(nil)
)

// Open opens, creating it if needed, the store in dataDir. It fails at once
// with an error matching ErrLocked when the directory is already open
// elsewhere, and refuses a directory whose format it does not know. ctx is
// sqlitestore.Open's too; opening Pebble takes none.
func Open(ctx context.Context, dataDir string, opts Options) (*Store, error) {
	return open(dataDir, opts, false)
}

// open opens the store; forCopy allows an unfinished copy's directory and
// refuses a store not made by a copy.
func open(dataDir string, opts Options, forCopy bool) (_ *Store, err error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: data directory %q: %w", dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pebblestore: creating data directory: %w", err)
	}
	lock, err := datadir.Lock(dir)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	}
	defer func() {
		if err != nil {
			_ = lock.Unlock() // err already says why Open failed
		}
	}()
	if engine, err := datadir.Detect(dir); err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	} else if engine == datadir.SQLite {
		return nil, fmt.Errorf("pebblestore: data directory %s holds a SQLite store; serve it with the SQLite engine, or copy it with `dedupd migrate-store`", dir)
	}
	events := new(engineEvents)
	o := pebbleOptions(opts, events)
	db, err := pebble.Open(filepath.Join(dir, datadir.PebbleDir), o)
	o.Cache.Unref() // the database holds its own reference
	if err != nil {
		return nil, fmt.Errorf("pebblestore: opening %s: %w", dir, err)
	}
	if err := checkOpen(db, forCopy); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("pebblestore: %s: %w", dir, err)
	}
	if err := settleLeaseEntries(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("pebblestore: %s: rewriting the entries of claims in flight: %w", dir, err)
	}
	s := &Store{dir: dir, lock: lock, db: db, commits: opts.Commits, events: events}
	s.API = store.NewAPI(s)
	s.PolicyKinds = store.PolicyKinds{
		Keys:    store.PolicyCalls[store.ConsumerPolicy]{Put: s.putKeyPolicy, Get: s.getKeyPolicy, Delete: s.deleteKeyPolicy},
		Streams: store.PolicyCalls[store.ConsumerStreamPolicy]{Put: s.putStreamPolicy, Get: s.getStreamPolicy, Delete: s.deleteStreamPolicy}}
	if err := s.loadBudgets(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("pebblestore: %s: counting parked events: %w", dir, err)
	}
	if !forCopy { // a copy's destination writes without the key stripes
		if err := s.startFilter(cmp.Or(opts.filterBytes, defaultFilterBytes)); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("pebblestore: %s: sizing the filter of record keys: %w", dir, err)
		}
	}
	return s, nil
}

func pebbleOptions(opts Options, events *engineEvents) *pebble.Options {
	cacheBytes := opts.CacheBytes
	if cacheBytes <= 0 {
		cacheBytes = 64 << 20
	}
	o := &pebble.Options{
		// Pinned, so that a newer Pebble does not raise the on-disk format
		// by itself and a downgrade of dedupd keeps working (format.go).
		FormatMajorVersion: pebble.FormatTableFormatV6,
		Logger:             quietLogger{},
		Cache:              pebble.NewCache(cacheBytes),
		EventListener:      events.listener(),
		MemTableSize:       opts.memTableBytes,
	}
	if opts.fs != nil {
		o.FS = opts.fs
	}
	if opts.Commits != nil {
		if o.FS == nil {
			o.FS = vfs.Default
		}
		o.FS = walSyncCounter{FS: o.FS, commits: opts.Commits}
	}
	// Most reads of a claim-heavy load are of keys that do not exist yet:
	// a bloom filter per table answers them without reading its blocks.
	// The memtable stays at Pebble's default (4 MiB): through dedupd on a
	// busy machine, 32 MiB ones cost more per read (a deeper skiplist, and
	// more of them queued behind a slow flush) than they saved.
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}

// checkOpen checks the format and whether the directory is what the
// caller may open: a store to serve, or a copy's destination.
func checkOpen(db *pebble.DB, forCopy bool) error {
	if err := checkFormat(db); err != nil {
		return err
	}
	_, copying, err := readCopyState(db)
	if err != nil {
		return err
	}
	data, err := hasRows(db)
	switch {
	case err != nil:
		return err
	case copying && !forCopy:
		return ErrCopyUnfinished
	case forCopy && !copying && data:
		return errors.New("the destination holds a store already; copy into a new directory")
	}
	return nil
}

// Close waits for the calls in flight, closes the database and releases the
// data directory. Later calls fail with store.ErrUnavailable.
func (s *Store) Close() error {
	s.stopFilter()
	s.open.Lock()
	defer s.open.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	errs := []error{s.db.Close(), s.lock.Unlock()}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pebblestore: closing %s: %w", s.dir, err)
	}
	return nil
}

// enter starts a call: it fails once the store is closed, and otherwise
// must be paired with leave.
func (s *Store) enter() error {
	s.open.RLock()
	if s.closed {
		s.open.RUnlock()
		return errClosed
	}
	return nil
}

func (s *Store) leave() { s.open.RUnlock() }

// enterFor is enter for a call of ctx, refused as well when ctx is done.
func (s *Store) enterFor(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		s.leave()
		return err
	}
	return nil
}

// Ping reads the format key.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if _, err := readFormat(s.db); err != nil {
		return dbError("ping", err)
	}
	return ctx.Err()
}

// errClosed is what every call on a closed store returns.
var errClosed = fmt.Errorf("pebblestore: %w: store is closed", store.ErrUnavailable)

// dbError turns a database failure into the contract's errors.
func dbError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("pebblestore: %s: %w: %w", op, store.ErrUnavailable, err)
}

// now is the store's clock, as every store keeps it.
func now() time.Time { return store.Now(time.Now()) }

// quietLogger drops Pebble's informational lines (a line per flush and
// compaction would drown the server's own log) and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}
