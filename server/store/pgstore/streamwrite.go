package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// Stream writes in one round trip.
//
// A stream write is store.ApplyStream on the stream's row. The plain way
// is a read and a compare-and-set on the version read: two round trips,
// three for a stream's first claim (compareAndSet). Two read-free paths
// replace the read when they can, each a single statement that writes
// the row ApplyStream decides or, when the row is not as expected, writes
// nothing and returns the row as it is, which then serves as the read of
// the plain path (so a miss costs what the plain path costs):
//
//   - a stream this store has a row of in memory (streamCache): the write
//     decided on that row, as a compare-and-set on its version, creation
//     and update times, and on which side of its expiry and lease the
//     statement's clock is (planStreamWrite says why that is
//     ApplyStream's decision);
//   - any other: the write decided for an absent stream, as an INSERT ...
//     ON CONFLICT DO NOTHING; a first claim is then one statement, and a
//     claim of a stream that exists is this statement as its read.
//
// Refusals and writes that change nothing (a duplicate, a claim in
// progress) are answered from a read, as before: only the database's row
// can say so.

// streamTimeValue is the SQL of time column number i of a plan's write,
// whose parameters start at $first: the copied time, or the statement's
// clock plus the offset in microseconds.
func streamTimeValue(first int) string {
	return fmt.Sprintf("COALESCE($%d::TIMESTAMPTZ, statement_timestamp() + $%d::INT8 * INTERVAL '1 microsecond')",
		first, first+1)
}

// writeOrReadStream wraps a write of dedup_streams that returns
// streamColumns and row_version into a statement that returns either the
// row written (written = true) or, when the write changed nothing, the
// stream's row as the statement read it (written = false), each followed
// by the statement's clock; nothing when there is neither. The main query
// reads the table only for a key the write left alone, so whether a
// statement sees its own writes (CockroachDB and PostgreSQL differ there)
// does not matter.
func writeOrReadStream(write string) string {
	return `WITH written AS (
` + write + `
    RETURNING ` + streamColumns + `, row_version
)
SELECT ` + streamColumns + `, row_version, true, statement_timestamp() FROM written
UNION ALL
SELECT ` + streamColumns + `, row_version, false, statement_timestamp()
FROM dedup_streams WHERE consumer = $1 AND stream = $2 AND NOT EXISTS (SELECT 1 FROM written)`
}

// streamParkArgs is where the park columns' parameters start in
// streamArgs (parked, parked_bytes, skipped, skip_from, skip_to,
// skip_cause, skipped_at) and in the read-free statements, after the 14
// columns and the 8 parameters of the four times.
const (
	streamParkArgs     = 18
	streamParkArgCount = 7
)

var (
	// updateStreamAsCachedSQL: $1..$14 as updateStreamSQL, $15..$22 the
	// four times (streamTimeValue), $23..$29 the park columns as
	// updateStreamSQL's $19..$25, then the expected row's version,
	// creation and update times, and the comparisons of the clock with its
	// expiry and lease that the decision rests on. The park columns are
	// written as decided on the cached row, which carries them: a parked
	// write moves row_version (parked.go), so a cached row whose parked
	// state is stale fails the version check and writes nothing.
	updateStreamAsCachedSQL = writeOrReadStream(`UPDATE dedup_streams SET
    mode = $3, high_water = $4, last_outcome = $5, rejection_reason = $6, rejection_message = $7,
    rejection_detail = $8, finished_token = $9, rejected = $10, in_flight = $11, digest = $12,
    fencing_token = $13, owner = $14,
    lease_expires_at = ` + streamTimeValue(15) + `, created_at = ` + streamTimeValue(17) + `,
    updated_at = ` + streamTimeValue(19) + `, expires_at = ` + streamTimeValue(21) + `,
    parked = $23, parked_bytes = $24, skipped = $25, skip_from = $26, skip_to = $27,
    skip_cause = $28, skipped_at = $29,
    row_version = row_version + 1
WHERE consumer = $1 AND stream = $2 AND row_version = $30 AND created_at = $31 AND updated_at = $32
  AND (statement_timestamp() < expires_at) = $33 AND (statement_timestamp() < lease_expires_at) = $34`)

	// insertStreamFreshSQL: $1..$14 as insertStreamSQL, $15..$22 the four
	// times, $23..$29 the park columns.
	insertStreamFreshSQL = writeOrReadStream(`INSERT INTO dedup_streams (` + streamColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
    ` + streamTimeValue(15) + `, ` + streamTimeValue(17) + `, ` + streamTimeValue(19) + `, ` + streamTimeValue(21) + `,
    $23, $24, $25, $26, $27, $28, $29)
ON CONFLICT (consumer, stream) DO NOTHING`)
)

// applyStream applies cmd to the stream's row: read-free when it can,
// otherwise with compareAndSet, starting from the row a read-free
// statement returned when one did; and, when cmd concerns the stream's
// parked events, in a transaction with them (applyStreamParked), as
// store.ApplyStream asks with store.ErrNeedsParkedView.
//
// The cache never lets a write skip parked state: a read-free write is
// planned with store.ApplyStream on the cached row, which carries the
// stream's parked count, so a write that needs the parked events is never
// planned; and it lands only at the cached row_version, which every parked
// write moves, so a cached row older than a parked write misses and the
// write is decided again on the row as stored.
func (s *Store) applyStream(ctx context.Context, op, consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	k := recordKey{consumer, stream}
	w, planned, parked := s.planStream(op, k, cmd)
	if parked {
		return s.applyStreamParkedUncached(ctx, op, k, cmd)
	}
	var (
		r   streamWriteResult
		err error
	)
	if planned {
		r, err = s.writeStreamUnread(ctx, w)
	}
	return s.settleStream(ctx, op, k, cmd, r, err)
}

// planStream says where cmd goes: to the transaction with the parked
// events (parked), to a read-free write (planned, w), or, neither, to the
// plain read and compare-and-set.
func (s *Store) planStream(op string, k recordKey, cmd store.StreamCommand) (w streamWrite, planned, parked bool) {
	if c, ok := cmd.(store.ClaimStreamParams); ok && c.Park {
		// A park claim always reads parked events (store.ParkedReadFor):
		// skip the statements that would only find that out.
		return streamWrite{}, false, true
	}
	expected, cached := s.streams.get(k)
	var stored *cachedStream
	if cached {
		stored = &expected
		if _, need := store.ParkedReadFor(&expected.st, cmd, s.clock.estimate()); need {
			// Most likely still so: go where the answer would send the
			// write (the transaction reads the row afresh either way).
			return streamWrite{}, false, true
		}
	}
	w, planned = s.planStreamUnread(op, k, stored, cmd)
	return w, planned, false
}

// settleStream finishes cmd after its read-free write r (err its error;
// the zero r when there was none): done, or decided on the row r read, or
// on a fresh read; and keeps the cache to what the stream now holds.
func (s *Store) settleStream(ctx context.Context, op string, k recordKey, cmd store.StreamCommand,
	r streamWriteResult, err error) (store.StreamDecision, error) {
	d, version := r.d, r.version
	if !r.done && err == nil {
		d, version, err = compareAndSetFrom(ctx, s, streamTable, op, k.consumer, k.key, cmd, r.read)
	}
	if errors.Is(err, store.ErrNeedsParkedView) {
		return s.applyStreamParkedUncached(ctx, op, k, cmd)
	}
	if err != nil || version == 0 {
		s.streams.forget(k)
	} else {
		s.streams.put(k, cachedStream{st: d.Stream, version: version})
	}
	return d, err
}

// applyStreamParkedUncached is applyStreamParked, which does not say the
// row_version it leaves: the stream is forgotten by the cache, and its
// next write reads it.
func (s *Store) applyStreamParkedUncached(ctx context.Context, op string, k recordKey, cmd store.StreamCommand) (store.StreamDecision, error) {
	s.streams.forget(k)
	return s.applyStreamParked(ctx, op, k.consumer, k.key, cmd)
}

// streamWrite is a read-free write of one stream, planned: what it
// decides, on which expected row, and the single-row statement's
// parameters (the multi-row statements take the same ones as arrays).
type streamWrite struct {
	op       string
	key      recordKey
	expected *cachedStream // nil: the stream taken as absent
	plan     streamPlan
	args     []any
}

// streamWriteResult is what a read-free write did. done says it wrote,
// with the decision and the row's new version. Otherwise read is the row
// the statement returned instead, for compareAndSetFrom, or nil when it
// returned none (or the write was not tried: a second write of one stream
// in a batch).
type streamWriteResult struct {
	d       store.StreamDecision
	version int64
	done    bool
	read    *versionedRead[store.Stream]
}

// planStreamUnread plans the read-free write of cmd, decided on expected
// (nil: the stream taken as absent); false when no plan is possible.
func (s *Store) planStreamUnread(op string, k recordKey, expected *cachedStream, cmd store.StreamCommand) (streamWrite, bool) {
	var stored *store.Stream
	if expected != nil {
		stored = &expected.st
	}
	p, ok := planStreamWrite(stored, cmd, s.clock.estimate())
	if !ok {
		return streamWrite{}, false
	}
	columns := streamArgs(p.d.Stream)
	args := make([]any, 0, len(columns)+2*streamTimeCount+5)
	args = append(args, columns[:14]...)
	args = append(args, p.timeArgs()...)
	args = append(args, columns[streamParkArgs:streamParkArgs+streamParkArgCount]...)
	if expected != nil {
		args = append(args, expected.version, stored.CreatedAt, stored.UpdatedAt, p.beforeExpiry, p.beforeLease)
	}
	return streamWrite{op: op, key: k, expected: expected, plan: p, args: args}, true
}

// writeStreamUnread writes w, in a batch with the read-free writes of
// other streams when group commit is on (streambatch.go).
func (s *Store) writeStreamUnread(ctx context.Context, w streamWrite) (streamWriteResult, error) {
	if s.streamWrites != nil {
		return s.streamWrites.do(ctx, w)
	}
	return s.writeStreamOne(ctx, w)
}

// writeStreamOne writes w alone, in its single-row statement.
func (s *Store) writeStreamOne(ctx context.Context, w streamWrite) (streamWriteResult, error) {
	sql := insertStreamFreshSQL
	if w.expected != nil {
		sql = updateStreamAsCachedSQL
	}
	var r streamWriteResult
	err := s.withRetry(ctx, w.op, func(ctx context.Context) error {
		var (
			row     store.Stream
			version int64
			written bool
			now     time.Time
		)
		row, err := scanStream(s.pool.QueryRow(ctx, sql, w.args...), &version, &written, &now)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			r = streamWriteResult{}
			return nil
		case err != nil:
			return err
		}
		s.clock.saw(now)
		r = w.result(row, version, written, now)
		return nil
	})
	return r, err
}

// result is what w did, from the row its statement returned for it: the
// row written, or the row as the statement read it.
func (w *streamWrite) result(row store.Stream, version int64, written bool, now time.Time) streamWriteResult {
	if written {
		d := w.plan.d
		d.Stream = row // the row as stored: ApplyStream's decision at now
		return streamWriteResult{d: d, version: version, done: true}
	}
	return streamWriteResult{read: &versionedRead[store.Stream]{row: &row, version: version, now: store.Now(now)}}
}
