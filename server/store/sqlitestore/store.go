// Package sqlitestore is the embedded store.Store: one SQLite database in a
// data directory, so that `dedupd serve` works with no setup.
//
// The store serves one process on one machine. An exclusive lock on
// dataDir/LOCK keeps a second dedupd off the same directory, which is what
// makes the local clock a safe store clock and lets all writes go through a
// single connection: SQLite has one writer at a time anyway, and queueing
// writers in Go is cheaper and fairer than letting them collide on
// SQLITE_BUSY. Lookups use a separate read-only pool, which WAL lets run
// beside the writer.
package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/dedupd/dedupd/internal/datadir"
	"github.com/dedupd/dedupd/migrations"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// ErrLocked is returned by Open when another process, or another store in
// this one (of either embedded engine), holds the data directory.
var ErrLocked = datadir.ErrLocked

const (
	dbFileName = datadir.SQLiteFile

	// busyTimeout bounds how long a connection waits for a lock held by
	// another connection (a reader during WAL recovery, a stray sqlite3
	// shell) before the call fails as unavailable.
	busyTimeout = 5 * time.Second
)

// Sync says when a commit reaches the disk: SQLite's synchronous setting,
// in WAL mode.
type Sync int

const (
	// SyncFull, the default, fsyncs the WAL on every commit: an acknowledged
	// Complete survives a power loss or kernel crash. An fsync costs about
	// 0.5 ms on the development machines; without group commit,
	// claim+complete cycles at 32 callers ran at 1,324/s, with it (one
	// fsync per group of queued writes) several thousand (go test -bench
	// Cycle ./server/store/sqlitestore/; docs/performance.md).
	SyncFull Sync = iota
	// SyncNormal writes the WAL without fsyncing it on commit: an
	// acknowledged write survives a crash of the process (kill -9, OOM
	// kill), but a power loss may take the last commits since the latest
	// checkpoint with it; the database stays consistent either way. About
	// three times the commit rate without group commit (3,877 cycles/s in
	// the same benchmark), much less of a gain with it.
	// Losing an acknowledged Complete means a redelivery runs its effect
	// again, so choose it only where the machine's power is not the risk.
	SyncNormal
)

// pragma is the value of SQLite's synchronous setting.
func (s Sync) pragma() string {
	if s == SyncNormal {
		return "NORMAL"
	}
	return "FULL"
}

// ParseSync reads a Sync from its flag spelling, "full" or "normal".
func ParseSync(s string) (Sync, error) {
	switch s {
	case "full":
		return SyncFull, nil
	case "normal":
		return SyncNormal, nil
	}
	return 0, fmt.Errorf("sync must be full or normal, not %q", s)
}

// Options tune the store; the zero value is the safe default.
type Options struct {
	Sync Sync
	// MaxBatch is the most writes committed together in one transaction
	// (group commit; see groupcommit.go). Zero means DefaultMaxBatch; one
	// turns group commit off, so every write is its own transaction.
	MaxBatch int
	// Commits, when set, records every transaction that wrote, with the
	// writes it carried, and under SyncFull its fsync (commits.go).
	Commits *commitmetrics.Recorder
}

func (o Options) maxBatch() int {
	if o.MaxBatch <= 0 {
		return DefaultMaxBatch
	}
	return o.MaxBatch
}

// Store is the embedded store.Store. Its methods are safe for concurrent use.
type Store struct {
	// API is the typed contract, derived from this engine.
	*store.API
	store.PolicyKinds

	dir    string
	lock   *flock.Flock
	closed atomic.Bool
	w      *writer
	r      *reader

	// applied are the migrations this Open ran; tests look at them.
	applied []migrations.Migration
}

var (
	_ store.Engine  = (*Store)(nil)
	_ store.Backend = (*Store)(nil)
)

// Open opens, creating it if needed, the store in dataDir and brings its
// schema up to date. It fails at once with an error matching ErrLocked when
// the directory is already open elsewhere.
func Open(ctx context.Context, dataDir string, opts Options) (_ *Store, err error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: data directory %q: %w", dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: creating data directory: %w", err)
	}
	lock, err := datadir.Lock(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, lock: lock}
	s.API = store.NewAPI(s)
	s.PolicyKinds = store.PolicyKinds{
		Keys:    store.PolicyCalls[store.ConsumerPolicy]{Put: s.putKeyPolicy, Get: s.getKeyPolicy, Delete: s.deleteKeyPolicy},
		Streams: store.PolicyCalls[store.ConsumerStreamPolicy]{Put: s.putStreamPolicy, Get: s.getStreamPolicy, Delete: s.deleteStreamPolicy}}
	defer func() {
		if err != nil {
			_ = s.closeAll() // err already says why Open failed
		}
	}()

	dbPath := filepath.Join(dir, dbFileName)
	if s.w, s.applied, err = openWriter(ctx, dbPath, opts.Sync, opts.maxBatch()); err != nil {
		return nil, err
	}
	s.w.commits, s.w.syncs = opts.Commits, opts.Sync == SyncFull
	if s.r, err = openReader(ctx, dbPath); err != nil {
		return nil, err
	}
	return s, nil
}

// dsn builds the driver's connection string. The path is escaped as a URI
// path so that a directory name holding '?', '#' or '%' cannot be read as
// parameters.
func dsn(path string, params url.Values) string {
	params.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params.Encode()
}

// Close waits for the write in progress, closes the database and releases
// the data directory. Later calls fail with store.ErrUnavailable.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.closeAll()
}

// closeAll releases whatever Open managed to acquire, the lock last so that
// no other process opens the database while this one still has it open.
func (s *Store) closeAll() error {
	var errs []error
	if s.w != nil {
		errs = append(errs, s.w.close())
	}
	if s.r != nil {
		errs = append(errs, s.r.close())
	}
	errs = append(errs, s.lock.Unlock())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlitestore: closing %s: %w", s.dir, err)
	}
	return nil
}

// Ping runs a trivial query on the read pool.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return s.r.ping(ctx)
}

// Apply runs a key command on the write connection (see decide.go for
// its statements): with group commit in the transaction of the commands
// queued beside it.
func (s *Store) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	consumer, key := store.KeyOf(cmd)
	return s.w.apply(ctx, consumer, key, cmd)
}

// Reap deletes at most limit expired records or streams.
func (s *Store) Reap(ctx context.Context, kind store.Kind, limit int) (int, error) {
	return store.ReapByKind(ctx, kind, limit, s.deleteExpiredRecords, s.deleteExpiredStreams)
}

// deleteExpiredRecords deletes at most limit expired records.
func (s *Store) deleteExpiredRecords(ctx context.Context, limit int) (int, error) {
	return s.w.deleteExpired(ctx, limit, store.Now(time.Now()))
}

// errClosed is what every call on a closed store returns.
var errClosed = fmt.Errorf("sqlitestore: %w: store is closed", store.ErrUnavailable)

// dbError turns a database failure into the contract's errors: the context's
// own error passes through so that callers can tell a cancellation from an
// outage; anything else means the database could not do its job.
func dbError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqlitestore: %s: %w: %w", op, store.ErrUnavailable, err)
}
