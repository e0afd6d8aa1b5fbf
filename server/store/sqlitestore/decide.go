package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The statements of a command. modernc.org/sqlite is C transpiled to Go, so
// every statement step costs real CPU, and a command runs as few and as
// cheap statements as its row allows. The two commands of a cycle are one
// statement each:
//
//   - a claim first inserts store.Apply(nil, claim, now), ON CONFLICT DO
//     NOTHING. The writer is the only writer and runs inside its
//     transaction, so the insert lands exactly when the key has no row,
//     and then that is Apply's answer. A conflict means a row exists (live
//     or expired: Apply must see it), and the claim takes the path that
//     reads;
//   - a Complete, Reject (release included) or ExtendLease of a lease this
//     writer granted is decided on the row it wrote and written by an
//     UPDATE that pins every column of that row (heldrows.go).
//
// Every other write reads the row, lets Apply decide, and UPDATEs only the
// columns Apply changed (updateChanged), which costs SQLite about two
// thirds of the upsert of every column and index entry.
//
// TestFastPathIsApply holds every path to Apply.

// decide runs cmd inside the open transaction and returns Apply's decision.
func (w *writer) decide(consumer, key string, cmd store.Command) (store.Decision, error) {
	return w.decideAt(consumer, key, cmd, store.Now(time.Now()))
}

// decideAt is decide at the clock reading now (whole microseconds).
func (w *writer) decideAt(consumer, key string, cmd store.Command, now time.Time) (store.Decision, error) {
	var (
		d    store.Decision
		done bool
		err  error
	)
	if c, ok := cmd.(store.ClaimParams); ok {
		d, done, err = w.insertFresh(c, now)
	} else {
		d, done, err = w.finishHeld(consumer, key, cmd, now)
	}
	if err != nil {
		return store.Decision{}, dbError("writing record", err)
	}
	if !done {
		if d, err = w.readApplyWrite(consumer, key, cmd, now); err != nil || !d.Write {
			return d, err
		}
	}
	w.held.note(&d.Record)
	return d, nil
}

// readApplyWrite reads the key's row, asks store.Apply what to do and
// writes the outcome: a new row whole, a stored one as the columns Apply
// changed.
func (w *writer) readApplyWrite(consumer, key string, cmd store.Command, now time.Time) (store.Decision, error) {
	stored, err := scanRecord(w.queryRow(w.selectRecord, consumer, key), consumer, key)
	if err != nil {
		return store.Decision{}, dbError("reading record", err)
	}
	d, err := store.Apply(stored, cmd, now)
	if err != nil || !d.Write {
		return d, err
	}
	if stored == nil {
		_, err = w.exec(w.upsertRecord, recordArgs(&d.Record)...)
	} else {
		err = w.updateChanged(stored, &d.Record)
	}
	if err != nil {
		return store.Decision{}, dbError("writing record", err)
	}
	return d, nil
}

// insertFresh inserts Apply's record for a claim of a key with no row. It
// reports false, having changed nothing, when the key has a row.
func (w *writer) insertFresh(c store.ClaimParams, now time.Time) (store.Decision, bool, error) {
	d, applyErr := store.Apply(nil, c, now)
	if fresh := applyErr == nil && d.Write; !fresh {
		return store.Decision{}, false, nil // the path that reads answers it
	}
	res, err := w.exec(w.insertFreshRecord, recordArgs(&d.Record)...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return store.Decision{}, false, err
	}
	return d, n == 1, nil
}

// queryRow and exec run a statement for a command and count it; the
// writer's slot guards the counter, which only tests read
// (TestCommandStatements).
func (w *writer) queryRow(stmt *sql.Stmt, args ...any) *sql.Row {
	w.statements++
	return stmt.QueryRowContext(context.Background(), args...)
}

func (w *writer) exec(stmt *sql.Stmt, args ...any) (sql.Result, error) {
	w.statements++
	return stmt.ExecContext(context.Background(), args...)
}
