package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dedupd/dedupd/migrations"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// writer owns the one connection that writes. Callers take turns through
// slot, a channel rather than a mutex so that a waiting caller can give up
// when its context ends, and so that waiters are served in arrival order.
//
// Each command runs inside an IMMEDIATE transaction: its own, or, with
// group commit, one shared with the commands queued beside it (see
// groupcommit.go). store.Apply decides it, in one statement where the row
// allows (decide.go), otherwise by reading the row and writing the result.
type writer struct {
	slot   chan struct{}
	closed bool // guarded by slot

	// maxBatch is the most commands per transaction; 1 is no group commit.
	maxBatch int
	queueMu  sync.Mutex
	queue    []queued // guarded by queueMu

	db   *sql.DB
	conn *sql.Conn

	begin, commit, rollback *sql.Stmt
	selectRecord            *sql.Stmt
	upsertRecord            *sql.Stmt
	insertFreshRecord       *sql.Stmt
	deleteBatch             *sql.Stmt
	// updates and pinned are the UPDATEs of stored rows, by the columns
	// they set (update.go); held are the leases this writer granted last
	// (heldrows.go). All guarded by slot, like statements.
	updates, pinned map[columnSet]*sql.Stmt
	held            heldRows
	// statements counts the statements commands ran (see count).
	statements int
	// group is what the open transaction's writes are (commits.go),
	// guarded by slot; commits records it, and syncs its fsync.
	group   commitmetrics.Group
	commits *commitmetrics.Recorder
	syncs   bool
}

// openWriter opens the write connection, switches the database to WAL and
// applies pending migrations. It returns the migrations it applied.
func openWriter(ctx context.Context, path string, durability Sync, maxBatch int) (_ *writer, _ []migrations.Migration, err error) {
	params := url.Values{}
	params.Set("_journal_mode", "WAL")
	params.Set("_synchronous", durability.pragma())
	// Commands begin IMMEDIATE explicitly; this covers any transaction
	// started through database/sql, which would otherwise be DEFERRED.
	params.Set("_txlock", "immediate")
	// Keep the WAL file from staying at its high-water mark after a burst.
	params.Add("_pragma", "journal_size_limit(67108864)")
	db, err := sql.Open("sqlite", dsn(path, params))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlitestore: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	w := &writer{slot: make(chan struct{}, 1), db: db, maxBatch: maxBatch}
	defer func() {
		if err != nil {
			w.close()
		}
	}()

	if w.conn, err = db.Conn(ctx); err != nil {
		return nil, nil, openError(path, "connecting", err)
	}
	if err := w.checkWAL(ctx); err != nil {
		return nil, nil, openError(path, "enabling WAL", err)
	}
	ms, err := migrations.Load(migrations.SQLite)
	if err != nil {
		return nil, nil, err
	}
	applied, err := migrations.Up(ctx, migrationConn{w.conn}, ms)
	if err != nil {
		return nil, nil, openError(path, "migrating", err)
	}
	if err := w.checkWritable(ctx); err != nil {
		return nil, nil, openError(path, "checking that it can be written", err)
	}
	if err := w.prepare(ctx); err != nil {
		return nil, nil, openError(path, "preparing statements", err)
	}
	return w, applied, nil
}

func (w *writer) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&w.begin, "BEGIN IMMEDIATE"},
		{&w.commit, "COMMIT"},
		{&w.rollback, "ROLLBACK"},
		{&w.selectRecord, selectRecord},
		{&w.upsertRecord, upsertRecord},
		{&w.insertFreshRecord, insertFreshRecord},
		{&w.deleteBatch, deleteExpired},
	} {
		stmt, err := w.conn.PrepareContext(ctx, p.sql) //nolint:sqlclosecheck // kept for the writer's life; closed by its close
		if err != nil {
			return fmt.Errorf("%.40q: %w", p.sql, err)
		}
		*p.stmt = stmt
	}
	return nil
}

// acquire waits for the write connection. Once it is held, the caller's
// context is no longer watched: a transaction takes microseconds, and
// interrupting a COMMIT would leave the caller unsure whether it happened.
func (w *writer) acquire(ctx context.Context) error {
	select {
	case w.slot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		w.release()
		return err
	}
	if w.closed {
		w.release()
		return errClosed
	}
	return nil
}

func (w *writer) release() { <-w.slot }

// apply runs one command in its own transaction.
func (w *writer) apply(ctx context.Context, consumer, key string, cmd store.Command) (store.Decision, error) {
	if w.maxBatch > 1 {
		return w.applyGrouped(ctx, consumer, key, cmd)
	}
	if err := w.acquire(ctx); err != nil {
		return store.Decision{}, err
	}
	defer w.release()
	var d store.Decision
	err := w.transact(func() (bool, error) {
		var err error
		d, err = w.decide(consumer, key, cmd)
		w.wrote(d.Write, commitmetrics.KindOf(cmd.Op()))
		return d.Write, err
	})
	if err != nil {
		return store.Decision{}, err
	}
	return d, nil
}

// write runs fn in a transaction of its own on the write connection, and
// commits unless fn fails.
func (w *writer) write(ctx context.Context, fn func() error) error {
	if err := w.acquire(ctx); err != nil {
		return err
	}
	defer w.release()
	return w.transact(func() (bool, error) {
		err := fn()
		w.wrote(err == nil, commitmetrics.KindOther)
		return err == nil, err
	})
}

// transact runs fn inside an IMMEDIATE transaction, which fn's writes need
// no lock upgrade for, and commits when fn asks to keep them. The caller
// holds the slot. Whatever happens, the transaction is over on return, so a
// failure cannot leak into the next caller's.
func (w *writer) transact(fn func() (commit bool, err error)) error {
	bg := context.Background()
	w.group = commitmetrics.Group{}
	if _, err := w.begin.ExecContext(bg); err != nil {
		return dbError("begin", err)
	}
	finished := false
	defer func() {
		if !finished {
			_ = w.abort() // the transaction's own error is the one to report
		}
	}()
	commit, err := fn()
	if err != nil || !commit {
		// Nothing to keep: a refusal, a replay, or a failed read or write.
		finished = true
		if rbErr := w.abort(); rbErr != nil && err == nil {
			return rbErr
		}
		return err
	}
	if _, err := w.commit.ExecContext(bg); err != nil {
		return dbError("commit", err)
	}
	finished = true
	w.committed()
	return nil
}

// abort rolls back the open transaction. SQLite may already have rolled it
// back itself (after an I/O error, say), which is no failure here.
func (w *writer) abort() error {
	_, err := w.rollback.ExecContext(context.Background())
	if err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		return dbError("rollback", err)
	}
	return nil
}

// deleteExpired deletes one batch of expired rows. Unlike a command, the
// DELETE watches ctx, since a large batch can take a while; the COMMIT does
// not, so a cancellation either undoes the batch or comes too late to.
func (w *writer) deleteExpired(ctx context.Context, limit int, now time.Time) (int, error) {
	if err := w.acquire(ctx); err != nil {
		return 0, err
	}
	defer w.release()
	if limit <= 0 {
		return 0, nil
	}
	var deleted int64
	err := w.transact(func() (bool, error) {
		res, err := w.deleteBatch.ExecContext(ctx, now.UnixMicro(), limit)
		if err == nil {
			deleted, err = res.RowsAffected()
		}
		if err != nil {
			return false, dbError("deleting expired records", err)
		}
		w.wrote(true, commitmetrics.KindOther)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	return int(deleted), nil
}

// close waits for the write in progress, then closes the connection.
// Waiters that get the slot afterwards see closed and fail.
func (w *writer) close() error {
	w.slot <- struct{}{}
	defer w.release()
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	for _, stmt := range []*sql.Stmt{w.begin, w.commit, w.rollback, w.selectRecord, w.upsertRecord, w.insertFreshRecord, w.deleteBatch} {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	for _, stmts := range []map[columnSet]*sql.Stmt{w.updates, w.pinned} {
		for _, stmt := range stmts {
			errs = append(errs, stmt.Close())
		}
	}
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	errs = append(errs, w.db.Close())
	return errors.Join(errs...)
}

// migrationConn adapts the write connection to the migration runner.
type migrationConn struct{ conn *sql.Conn }

func (m migrationConn) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := m.conn.ExecContext(ctx, sql, args...)
	if err != nil && addsColumn(sql) && strings.Contains(err.Error(), "duplicate column name") {
		// SQLite's ADD COLUMN has no IF NOT EXISTS: a column already there
		// is a step an interrupted run did already (see migrations.Up).
		return nil
	}
	return err
}

func addsColumn(sql string) bool {
	return strings.HasPrefix(sql, "ALTER TABLE ") && strings.Contains(sql, " ADD COLUMN ")
}

func (m migrationConn) QueryVersions(ctx context.Context, sql string) ([]int64, error) {
	rows, err := m.conn.QueryContext(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		versions = append(versions, v)
	}
	return versions, rows.Err()
}

func openError(path, step string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqlitestore: opening %s: %s: %w", path, step, err)
}
