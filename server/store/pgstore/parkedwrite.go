package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// The write of a parked decision: the stream's row, as a compare-and-set,
// and its parked events, in one statement whose parked changes happen
// only if the row was written (they read the CTE "written").
const (
	insertParkedColumns = `INSERT INTO dedup_parked (consumer, stream, sequence, digest, payload, payload_bytes, parked_at)`

	// insertParkedValuesSQL parks an event of a row written earlier in
	// the same transaction.
	insertParkedValuesSQL = insertParkedColumns + ` VALUES ($1, $2, $3, $4, $5, $6, $7)`
)

// parkedWrite is the statement that writes a parked decision and its
// parameters; apart, when set, is the park that could not share it.
type parkedWrite struct {
	sql   string
	args  []any
	apart *store.ParkedEvent
}

// planParkedWrite plans d's write: an update of the row read at version
// (exists) or an insert of a row that must still be absent, then d's
// deletions and park.
//
// A decision that both deletes and parks (a park on an expired stream
// whose old parked events go) would modify dedup_parked twice in one
// statement, which CockroachDB refuses (it allows that only for plain
// inserts); its park is then a second statement in the same transaction.
// The only such case is rare and writes nothing that others read before
// it commits.
func planParkedWrite(d store.StreamDecision, exists bool, version int64) parkedWrite {
	row, args := insertStreamSQL, streamArgs(d.Stream)
	if exists {
		row, args = updateStreamSQL, append(args, version)
	}
	q := "WITH written AS (\n" + row + "\n)"
	unparks := d.UnparkAll || len(d.Unpark) > 0
	if unparks {
		q += ",\nunparked AS (\n    DELETE FROM dedup_parked WHERE consumer = $1 AND stream = $2"
		if !d.UnparkAll {
			args = append(args, d.Unpark)
			q += fmt.Sprintf(" AND sequence = ANY($%d)", len(args))
		}
		q += " AND EXISTS (SELECT 1 FROM written)\n)"
	}
	w := parkedWrite{}
	if ev := d.Park; ev != nil && unparks {
		w.apart = ev
	} else if ev != nil {
		n := len(args)
		args = append(args, ev.Sequence, notNull(ev.Digest), notNull(ev.Payload), ev.PayloadBytes, ev.ParkedAt)
		q += fmt.Sprintf(",\nparked AS (\n    %s\n    SELECT consumer, stream, $%d::INT8, $%d::BYTEA, $%d::BYTEA, $%d::INT8, $%d::TIMESTAMPTZ FROM written\n)",
			insertParkedColumns, n+1, n+2, n+3, n+4, n+5)
	}
	w.sql, w.args = q+"\nSELECT "+streamColumns+" FROM written", args
	return w
}

// writeParked writes d (planParkedWrite) and returns the row as stored;
// errConcurrentWrite when the row is no longer the one read.
func (s *Store) writeParked(ctx context.Context, d store.StreamDecision, exists bool, version int64) (store.Stream, error) {
	w := planParkedWrite(d, exists, version)
	if w.apart == nil {
		return scanWritten(s.pool.QueryRow(ctx, w.sql, w.args...))
	}
	var st store.Stream
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var err error
		if st, err = scanWritten(tx.QueryRow(ctx, w.sql, w.args...)); err != nil {
			return err
		}
		ev := w.apart
		_, err = tx.Exec(ctx, insertParkedValuesSQL, d.Stream.Consumer, d.Stream.Stream, ev.Sequence,
			notNull(ev.Digest), notNull(ev.Payload), ev.PayloadBytes, ev.ParkedAt)
		return err
	})
	return st, err
}

// scanWritten reads the row a compare-and-set wrote; none means it lost.
func scanWritten(row pgx.Row) (store.Stream, error) {
	st, err := scanStream(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Stream{}, errConcurrentWrite
	}
	return st, err
}
