package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/dedupd/dedupd/server/store"
)

// The UPDATEs of a stored row write only the columns a decision changed:
// fewer values bound, and no index entry rewritten that stays the same.
// There is one prepared statement per set of columns; the commands write a
// handful of sets, one per kind of write.

// columnSet is a set of recordColumns, by index.
type columnSet uint32

func (s columnSet) has(i int) bool { return s&(1<<i) != 0 }

// maxUpdateStatements bounds the prepared UPDATEs of each kind kept; past
// it a set is written some other way (see the callers of preparedFor).
const maxUpdateStatements = 32

// changedColumns compares next with old, a record of the same key: the
// recordArgs of old, the columns that differ, and the values of the
// UPDATE (consumer, key, then the changed columns in recordColumns order).
func changedColumns(old, next *store.Record) (oldArgs []any, set columnSet, values []any) {
	oldArgs, args := recordArgs(old), recordArgs(next)
	values = append(make([]any, 0, len(args)), args[0], args[1])
	for i := 2; i < len(args); i++ {
		if !sameValue(oldArgs[i], args[i]) {
			set |= 1 << i
			values = append(values, args[i])
		}
	}
	return oldArgs, set, values
}

// updateChanged writes next over stored, the row this transaction read.
func (w *writer) updateChanged(stored, next *store.Record) error {
	_, set, values := changedColumns(stored, next)
	if set == 0 {
		return nil
	}
	stmt, err := w.preparedFor(&w.updates, set, updateSQL)
	if err != nil {
		return err
	}
	if stmt == nil {
		_, err = w.exec(w.upsertRecord, recordArgs(next)...)
		return err
	}
	_, err = w.exec(stmt, values...)
	return err
}

// updateSQL is the UPDATE of the columns of set: $1 consumer, $2 key, then
// the values in recordColumns order.
func updateSQL(set columnSet) string {
	return `UPDATE dedup_records SET ` + setList(set, 3) + `
WHERE consumer = $1 AND key = $2`
}

// pinnedSQL is the UPDATE of the columns of set on the row whose every
// column is its parameter: $1.. in recordColumns order (IS, so that a NULL
// pins a NULL), then the values.
func pinnedSQL(set columnSet) string {
	pins := []string{"consumer = $1", "key = $2"}
	for i := 2; i < len(recordColumns); i++ {
		pins = append(pins, fmt.Sprintf("%s IS $%d", recordColumns[i], i+1))
	}
	return `UPDATE dedup_records SET ` + setList(set, len(recordColumns)+1) + `
WHERE ` + strings.Join(pins, " AND ")
}

// setList is the SET list of the columns of set, their parameters
// numbered from first.
func setList(set columnSet, first int) string {
	var cols []string
	for i, name := range recordColumns {
		if set.has(i) {
			cols = append(cols, fmt.Sprintf("%s = $%d", name, first+len(cols)))
		}
	}
	return strings.Join(cols, ", ")
}

// preparedFor returns the statement of set in stmts, preparing it with
// sqlOf on first use and keeping it for the writer's life; nil past
// maxUpdateStatements.
func (w *writer) preparedFor(stmts *map[columnSet]*sql.Stmt, set columnSet, sqlOf func(columnSet) string) (*sql.Stmt, error) {
	if stmt, ok := (*stmts)[set]; ok {
		return stmt, nil
	}
	if len(*stmts) >= maxUpdateStatements {
		return nil, nil
	}
	stmt, err := w.conn.PrepareContext(context.Background(), sqlOf(set))
	if err != nil {
		return nil, err
	}
	if *stmts == nil {
		*stmts = map[columnSet]*sql.Stmt{}
	}
	(*stmts)[set] = stmt
	return stmt, nil
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
