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

var (
	// updateStreamAsCachedSQL: $1..$14 as updateStreamSQL, $15..$22 the
	// four times (streamTimeValue), then the expected row's version,
	// creation and update times, and the comparisons of the clock with its
	// expiry and lease that the decision rests on.
	updateStreamAsCachedSQL = writeOrReadStream(`UPDATE dedup_streams SET
    mode = $3, high_water = $4, last_outcome = $5, rejection_reason = $6, rejection_message = $7,
    rejection_detail = $8, finished_token = $9, rejected = $10, in_flight = $11, digest = $12,
    fencing_token = $13, owner = $14,
    lease_expires_at = ` + streamTimeValue(15) + `, created_at = ` + streamTimeValue(17) + `,
    updated_at = ` + streamTimeValue(19) + `, expires_at = ` + streamTimeValue(21) + `,
    row_version = row_version + 1
WHERE consumer = $1 AND stream = $2 AND row_version = $23 AND created_at = $24 AND updated_at = $25
  AND (statement_timestamp() < expires_at) = $26 AND (statement_timestamp() < lease_expires_at) = $27`)

	// insertStreamFreshSQL: $1..$14 as insertStreamSQL, $15..$22 the four
	// times.
	insertStreamFreshSQL = writeOrReadStream(`INSERT INTO dedup_streams (` + streamColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
    ` + streamTimeValue(15) + `, ` + streamTimeValue(17) + `, ` + streamTimeValue(19) + `, ` + streamTimeValue(21) + `)
ON CONFLICT (consumer, stream) DO NOTHING`)
)

// applyStream applies cmd to the stream's row: read-free when it can,
// otherwise with compareAndSet, starting from the row a read-free
// statement returned when one did.
func (s *Store) applyStream(ctx context.Context, op, consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	k := recordKey{consumer, stream}
	expected, cached := s.streams.get(k)
	var stored *cachedStream
	if cached {
		stored = &expected
	}
	d, version, done, read, err := s.writeStreamUnread(ctx, op, stored, cmd)
	if !done && err == nil {
		d, version, err = compareAndSetFrom(ctx, s, streamTable, op, consumer, stream, cmd, read)
	}
	if err != nil || version == 0 {
		s.streams.forget(k)
	} else {
		s.streams.put(k, cachedStream{st: d.Stream, version: version})
	}
	return d, err
}

// writeStreamUnread tries the read-free write of cmd, decided on expected
// (nil: the stream taken as absent). done says it wrote, with the
// decision and the row's new version. Otherwise read is the row the
// statement returned instead, for compareAndSetFrom, or nil when it
// returned none or no plan was possible.
func (s *Store) writeStreamUnread(ctx context.Context, op string, expected *cachedStream, cmd store.StreamCommand) (
	d store.StreamDecision, version int64, done bool, read *versionedRead[store.Stream], err error) {
	var stored *store.Stream
	if expected != nil {
		stored = &expected.st
	}
	p, ok := planStreamWrite(stored, cmd, s.clock.estimate())
	if !ok {
		return d, 0, false, nil, nil
	}
	sql, args := insertStreamFreshSQL, streamArgs(p.d.Stream)[:14:14]
	args = append(args, p.timeArgs()...)
	if expected != nil {
		sql = updateStreamAsCachedSQL
		args = append(args, expected.version, stored.CreatedAt, stored.UpdatedAt, p.beforeExpiry, p.beforeLease)
	}
	err = s.withRetry(ctx, op, func(ctx context.Context) error {
		var (
			row     store.Stream
			written bool
			now     time.Time
		)
		row, err := scanStream(s.pool.QueryRow(ctx, sql, args...), &version, &written, &now)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			read = nil
			return nil
		case err != nil:
			return err
		}
		s.clock.saw(now)
		if written {
			d, done = p.d, true
			d.Stream = row // the row as stored: ApplyStream's decision at now
			return nil
		}
		read = &versionedRead[store.Stream]{row: &row, version: version, now: store.Now(now)}
		return nil
	})
	return d, version, done, read, err
}
