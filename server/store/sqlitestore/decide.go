package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The statements of a command. modernc.org/sqlite is C transpiled to Go, so
// every statement step costs real CPU, and a command runs as few and as
// cheap statements as its row allows:
//
//   - a claim first inserts store.Apply(nil, claim, now), ON CONFLICT DO
//     NOTHING. The writer is the only writer and runs inside its
//     transaction, so the insert lands exactly when the key has no row,
//     and then that is Apply's answer: a fresh claim is one statement. A
//     conflict means a row exists (live or expired: Apply must see it),
//     and the claim takes the path that reads;
//   - every other write reads the row, lets Apply decide, and UPDATEs only
//     the columns Apply changed (updateChanged), which costs SQLite about
//     two thirds of the upsert that rewrote every column and index entry.
//
// Why a finish of a held lease is not one conditional UPDATE ... RETURNING
// (the plan pgstore uses for streams): it was built, held to Apply by the
// oracle test, and measured. SQLite runs RETURNING through an ephemeral
// table, and in modernc the UPDATE returning the record's columns cost
// about as much CPU as the SELECT and the targeted UPDATE together (28 µs
// against 10 + 9 µs per command, BenchmarkDecide's setting), before the
// cost of planning the write ahead of the read. The read stays.
//
// TestFastPathIsApply holds both paths to Apply.

// decide runs cmd inside the open transaction and returns Apply's decision.
func (w *writer) decide(consumer, key string, cmd store.Command) (store.Decision, error) {
	return w.decideAt(consumer, key, cmd, store.Now(time.Now()))
}

// decideAt is decide at the clock reading now (whole microseconds).
func (w *writer) decideAt(consumer, key string, cmd store.Command, now time.Time) (store.Decision, error) {
	if c, ok := cmd.(store.ClaimParams); ok {
		if d, inserted, err := w.insertFresh(c, now); err != nil || inserted {
			return d, err
		}
	}
	return w.readApplyWrite(consumer, key, cmd, now)
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
		return store.Decision{}, false, dbError("inserting record", err)
	}
	return d, n == 1, nil
}

// updateChanged writes next over stored, the row this transaction read:
// the columns whose values differ, by a prepared UPDATE per set of them.
func (w *writer) updateChanged(stored, next *store.Record) error {
	old, args := recordArgs(stored), recordArgs(next)
	var set columnSet
	values := append(make([]any, 0, len(args)), args[0], args[1]) // consumer and key, which never change
	for i := 2; i < len(args); i++ {
		if !sameValue(old[i], args[i]) {
			set |= 1 << i
			values = append(values, args[i])
		}
	}
	if set == 0 {
		return nil
	}
	stmt, err := w.updateStatement(set)
	if err != nil {
		return err
	}
	if stmt == nil {
		_, err = w.exec(w.upsertRecord, args...)
		return err
	}
	_, err = w.exec(stmt, values...)
	return err
}

// columnSet is a set of recordColumns, by index.
type columnSet uint32

func (s columnSet) has(i int) bool { return s&(1<<i) != 0 }

// maxUpdateStatements bounds the prepared UPDATEs kept. The commands set a
// handful of column sets (one per kind of write); past the bound, a set is
// written by the upsert of every column.
const maxUpdateStatements = 32

// updateStatement returns the prepared UPDATE of the columns of set,
// preparing it on first use and keeping it for the writer's life; nil
// past maxUpdateStatements.
func (w *writer) updateStatement(set columnSet) (*sql.Stmt, error) {
	if stmt, ok := w.updates[set]; ok {
		return stmt, nil
	}
	if len(w.updates) >= maxUpdateStatements {
		return nil, nil
	}
	stmt, err := w.conn.PrepareContext(context.Background(), updateSQL(set))
	if err != nil {
		return nil, err
	}
	if w.updates == nil {
		w.updates = map[columnSet]*sql.Stmt{}
	}
	w.updates[set] = stmt
	return stmt, nil
}

// updateSQL is the UPDATE of the columns of set: $1 consumer, $2 key, then
// the values in recordColumns order.
func updateSQL(set columnSet) string {
	var cols []string
	for i, name := range recordColumns {
		if set.has(i) {
			cols = append(cols, fmt.Sprintf("%s = $%d", name, 3+len(cols)))
		}
	}
	return `UPDATE dedup_records SET ` + strings.Join(cols, ", ") + `
WHERE consumer = $1 AND key = $2`
}

// sameValue reports whether two recordArgs values are stored alike: the
// same type and value, a NULL only like a NULL.
func sameValue(a, b any) bool {
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && (x == nil) == (y == nil) && bytes.Equal(x, y)
	}
	return a == b
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
