// Package pgstore is the store.Store of dedupd on PostgreSQL and CockroachDB.
//
// Every decision is store.Apply's; this package only reads a record, asks
// Apply, and writes the answer as a compare-and-set on the row's version,
// retried from the read when another writer got there first or the database
// reports a serialization failure. The clock is always the database's
// (statement_timestamp()), never the server's, so server replicas with
// skewed clocks agree on when a lease runs out.
//
// A claim of a free key, the common case, is a single INSERT ... ON CONFLICT
// DO NOTHING; only when the key already has a record does a claim fall back
// to the read-then-compare-and-set that Complete, Reject and ExtendLease
// always use. See compareAndSet for why that is not a SERIALIZABLE
// transaction.
//
// With group commit on (the default; Options.MaxBatch), concurrent fresh
// claims share one multi-row INSERT and concurrent Completes, Rejects and
// ExtendLeases one read and one compare-and-set UPDATE (groupcommit.go),
// with the same answers as one at a time. A batch's fresh claims are
// inserted and its other keys read in one statement (batch.go). A stream
// write is one statement when the store still holds the stream's last row
// or the stream is new, decided ahead of the read and checked by the
// database (streamwrite.go, streamplan.go); concurrent ones share one such
// statement for remembered streams and one for new ones (streambatch.go).
//
// The SQL keeps to what both databases run with the same meaning (see
// records.go). Open does not migrate: the server runs Migrate, or refuses to
// serve while PendingMigrations reports any.
package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/migrations"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// defaultMaxConns sizes the pool when the URL sets no pool_max_conns. A
// claim holds a connection for one round trip, or a few in a transaction, so
// 16 connections keep ~32 concurrent callers busy without making a small
// (2-core) database server juggle more backends than it has work for.
const defaultMaxConns = 16

// maxMigrateRetries bounds the reruns of the migration runner after a
// collision with another server migrating at the same time, or a
// serialization failure. Each collision means the other server finished a
// statement, so a few reruns suffice.
const maxMigrateRetries = 10

// Store is a store.Store backed by a pgx connection pool.
type Store struct {
	// API is the typed contract, derived from this engine.
	*store.API
	store.PolicyKinds

	pool *pgxpool.Pool
	// onRetry, when set, is told of every retried attempt (for metrics).
	onRetry func(op string)
	// commits records group commit's commits (nil: nothing recorded).
	commits *commitmetrics.Recorder
	// fresh and finish group concurrent fresh claims, and concurrent
	// Completes, Rejects and ExtendLeases, into one statement each batch;
	// nil when group commit is off.
	fresh  *freshBatcher
	finish *finishBatcher
	// streamWrites groups concurrent read-free stream writes into one
	// statement (streambatch.go); nil when group commit is off.
	streamWrites *streamWriteBatcher
	// streams remembers the last row of recently written streams, the
	// expected previous state of a read-free stream write; clock
	// estimates the database's clock for deciding one (streamwrite.go).
	streams *streamCache
	clock   dbClock
}

var (
	_ store.Engine  = (*Store)(nil)
	_ store.Backend = (*Store)(nil)
)

// Open returns a store on the database at databaseURL (a postgres:// URL or
// a key=value connection string; pgxpool's pool_* settings apply), tuned by
// opts (the zero value is the default). The pool connects lazily, so Open
// succeeds while the database is down; calls then fail with
// store.ErrUnavailable until it is back.
func Open(ctx context.Context, databaseURL string, opts Options) (*Store, error) {
	return open(ctx, databaseURL, opts, nil)
}

// open is Open with a hook to adjust the pool configuration (tests add
// a query tracer).
func open(ctx context.Context, databaseURL string, opts Options, configure func(*pgxpool.Config)) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parsing database URL: %w", err)
	}
	// ParseConfig has already consumed pool_max_conns, and replaced its
	// absence with a default sized for the client's CPUs, not its callers.
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: creating connection pool: %w", err)
	}
	s := &Store{pool: pool, onRetry: opts.OnRetry, commits: opts.Commits, streams: newStreamCache()}
	s.API = store.NewAPI(s)
	s.PolicyKinds = store.PolicyKinds{
		Keys:    store.PolicyCalls[store.ConsumerPolicy]{Put: s.putKeyPolicy, Get: s.getKeyPolicy, Delete: s.deleteKeyPolicy},
		Streams: store.PolicyCalls[store.ConsumerStreamPolicy]{Put: s.putStreamPolicy, Get: s.getStreamPolicy, Delete: s.deleteStreamPolicy}}
	if n := opts.maxBatch(); n > 1 {
		s.fresh = s.newFreshBatcher(n)
		s.finish = s.newFinishBatcher(n)
		s.streamWrites = s.newStreamWriteBatcher(n)
	}
	return s, nil
}

// Close stops group commit once its batches in flight are answered, then
// closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	if s.fresh != nil {
		s.fresh.close()
		s.finish.close()
		s.streamWrites.close()
	}
	s.pool.Close()
	return nil
}

// Ping reports whether the database answers a query. Any failure, even the
// caller's deadline, wraps store.ErrUnavailable: a health check that cannot
// reach the database in time has found it unavailable.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "SELECT 1"); err != nil {
		return fmt.Errorf("%w: pgstore: ping: %w", store.ErrUnavailable, err)
	}
	return nil
}

// Migrate applies the migrations the database lacks and returns them; none
// when the schema is current.
func (s *Store) Migrate(ctx context.Context) ([]migrations.Migration, error) {
	all, err := s.schema(ctx)
	if err != nil {
		return nil, err
	}
	return s.migrateUp(ctx, "migrate", all)
}

// migrateUp runs the migration runner over ms while holding the migration
// lease (migrationlock.go), so that replicas starting together migrate one
// at a time, at any isolation; a schema already current takes no lease. It
// runs the runner again after an error that says another attempt can
// succeed:
//   - idempotent DDL can still collide inside PostgreSQL's catalog with a
//     session that does not take the lease (an older dedupd), which then
//     reports a duplicate;
//   - a serialization failure (40001) aborted a statement, which CockroachDB
//     can raise for DDL and for the version table's insert.
//
// Each rerun finds the work done so far and skips it. An ambiguous commit
// (40003) is not rerun: it is reported as ErrUnavailable, like any outcome
// the runner cannot know, and running migrate again settles it.
func (s *Store) migrateUp(ctx context.Context, op string, ms []migrations.Migration) ([]migrations.Migration, error) {
	var pending []migrations.Migration
	err := retryMigration(ctx, func(ctx context.Context) (err error) {
		pending, err = migrations.Pending(ctx, migrationConn{s.pool}, ms)
		return err
	})
	if err != nil || len(pending) == 0 {
		return nil, classify(ctx, op, err)
	}
	var applied []migrations.Migration
	err = s.withMigrationLock(ctx, func(ctx context.Context) error {
		return retryMigration(ctx, func(ctx context.Context) (err error) {
			applied, err = migrations.Up(ctx, migrationConn{s.pool}, ms)
			return err
		})
	})
	if err != nil {
		return nil, classify(ctx, op, err)
	}
	return applied, nil
}

// retryMigration runs step until it succeeds, fails with an error that
// another attempt cannot mend, or has been run again maxMigrateRetries
// times.
func retryMigration(ctx context.Context, step func(context.Context) error) error {
	for retry := 1; ; retry++ {
		err := step(ctx)
		if err == nil || retry > maxMigrateRetries || !(isConcurrentDDL(err) || isRetryable(err)) {
			return err
		}
		if err = sleep(ctx, backoff(retry)); err != nil {
			return err
		}
	}
}

// PendingMigrations returns the migrations the database lacks.
func (s *Store) PendingMigrations(ctx context.Context) ([]migrations.Migration, error) {
	all, err := s.schema(ctx)
	if err != nil {
		return nil, err
	}
	pending, err := migrations.Pending(ctx, migrationConn{s.pool}, all)
	if err != nil {
		return nil, classify(ctx, "pending migrations", err)
	}
	return pending, nil
}

// schema returns the migrations that make up the head of this database's
// schema: the portable set, and on PostgreSQL the PostgreSQL-only set too.
func (s *Store) schema(ctx context.Context) ([]migrations.Migration, error) {
	v, err := s.serverVersion(ctx)
	if err != nil {
		return nil, err
	}
	return migrations.Load(dialectsOf(v)...)
}

// dialectsOf returns the migration sets for the database whose SELECT
// version() is v.
func dialectsOf(version string) []migrations.Dialect {
	if isCockroachDB(version) {
		return []migrations.Dialect{migrations.Postgres}
	}
	return []migrations.Dialect{migrations.Postgres, migrations.PostgresOnly}
}

// isConcurrentDDL reports the errors PostgreSQL raises when two sessions run
// the same CREATE ... IF NOT EXISTS at once: a unique violation in its
// catalog, or a duplicate table or object.
func isConcurrentDDL(err error) bool {
	switch sqlState(err) {
	case "23505", "42P07", "42710":
		return true
	case "40P01":
		// Two migrators' DDL on tables joined by a foreign key (dedup_parked
		// and dedup_streams) can lock them in opposite orders; PostgreSQL
		// aborts one, and its rerun finds the other's work done.
		return true
	}
	return false
}

// migrationConn runs the migration runner's statements on the pool, each on
// its own in an implicit transaction, as CockroachDB requires for DDL.
type migrationConn struct {
	pool *pgxpool.Pool
}

func (c migrationConn) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := c.pool.Exec(ctx, sql, args...)
	return err
}

func (c migrationConn) QueryVersions(ctx context.Context, sql string) ([]int64, error) {
	rows, err := c.pool.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
