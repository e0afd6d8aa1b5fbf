package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// One statement per command. modernc.org/sqlite is C transpiled to Go, so
// every statement step costs real CPU; the two commands of a cycle (a claim
// of a new key, then the holder's finish) each run one statement here
// instead of a read and a write:
//
//   - a claim first inserts store.Apply(nil, claim, now), ON CONFLICT DO
//     NOTHING. The writer is the only writer and runs inside its
//     transaction, so the insert lands exactly when the key has no row, and
//     then that is Apply's answer; a conflict means a row exists (live or
//     expired: Apply must see it) and the claim takes the path that reads;
//   - a Complete, Reject (release included) or ExtendLease of a held lease
//     is one conditional UPDATE, planned by planFinish from Apply's own
//     decisions (finishplan.go); when it changes no row, the path that
//     reads decides.
//
// Both fast paths cost a wasted statement when they miss (a replayed claim,
// a refused finish), which is the rarer case. TestFastPathIsApply holds
// them to Apply.

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
	} else if p, ok := planFinish(consumer, key, cmd, now); ok {
		if d, updated, err := w.finishHeld(consumer, key, p, now); err != nil || updated {
			return d, err
		}
	}
	return w.readApplyWrite(consumer, key, cmd, now)
}

// readApplyWrite reads the key's row, asks store.Apply what to do and
// writes the outcome.
func (w *writer) readApplyWrite(consumer, key string, cmd store.Command, now time.Time) (store.Decision, error) {
	stored, err := scanRecord(w.queryRow(w.selectRecord, consumer, key), consumer, key)
	if err != nil {
		return store.Decision{}, dbError("reading record", err)
	}
	d, err := store.Apply(stored, cmd, now)
	if err != nil || !d.Write {
		return d, err
	}
	if _, err := w.exec(w.upsertRecord, recordArgs(&d.Record)...); err != nil {
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

// finishHeld runs p's conditional UPDATE. It reports false, having changed
// nothing, when the row is not the held lease p rests on.
func (w *writer) finishHeld(consumer, key string, p finishPlan, now time.Time) (store.Decision, bool, error) {
	stmt, err := w.finishStatement(p.set)
	if err != nil {
		return store.Decision{}, false, dbError("preparing finish", err)
	}
	args := append([]any{consumer, key, string(heldState), p.token, now.UnixMicro()}, p.values...)
	rec := store.Record{Consumer: consumer, Key: key}
	err = scanFields(w.queryRow(stmt, args...), &rec)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Decision{}, false, nil
	}
	if err != nil {
		return store.Decision{}, false, dbError("writing record", err)
	}
	d := p.d
	d.Record = rec
	return d, true, nil
}

// finishStatement returns the prepared UPDATE that sets the columns of set,
// preparing it on first use: a handful of sets occur (one per kind of
// finish), each kept for the writer's life.
func (w *writer) finishStatement(set columnSet) (*sql.Stmt, error) {
	if stmt, ok := w.finishes[set]; ok {
		return stmt, nil
	}
	stmt, err := w.conn.PrepareContext(context.Background(), finishSQL(set))
	if err != nil {
		return nil, err
	}
	if w.finishes == nil {
		w.finishes = map[columnSet]*sql.Stmt{}
	}
	w.finishes[set] = stmt
	return stmt, nil
}

// finishSQL is the conditional UPDATE of a held lease setting the columns
// of set: $1 consumer, $2 key, then the preconditions planFinish rests on
// ($3 state, $4 fencing token, $5 now before expires_at), then the values.
func finishSQL(set columnSet) string {
	var cols []string
	for i, name := range recordColumns {
		if set.has(i) {
			cols = append(cols, fmt.Sprintf("%s = $%d", name, 6+len(cols)))
		}
	}
	return `UPDATE dedup_records SET ` + strings.Join(cols, ", ") + `
WHERE consumer = $1 AND key = $2 AND state = $3 AND fencing_token = $4 AND expires_at > $5
RETURNING ` + recordFields
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
