package sqlitestore

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// Park mode on SQLite: parked events are rows of dedup_parked, read and
// written inside the same IMMEDIATE transaction as their stream's row, so a
// park, a release hand-off and the mark they move are one write.
const (
	deleteExpiredParkedSQL = `DELETE FROM dedup_parked WHERE (consumer, stream) IN (
    SELECT consumer, stream FROM dedup_streams WHERE parked > 0 AND expires_at <= $1)`

	insertParkedSQL = `INSERT INTO dedup_parked (consumer, stream, sequence, digest, payload, payload_bytes, parked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`

	// summaryParkedSQL is one stream's lowest and highest parked sequence
	// and oldest parking time.
	summaryParkedSQL = `SELECT COALESCE(MIN(sequence), 0), COALESCE(MAX(sequence), 0), COALESCE(MIN(parked_at), 0)
FROM dedup_parked WHERE consumer = $1 AND stream = $2`
)

// skipColumns are a stream's LastSkipped as its columns hold it.
type skipColumns struct {
	from, to, at int64
	cause        string
}

func encodeSkip(r *store.SkippedRange) skipColumns {
	if r == nil {
		return skipColumns{}
	}
	return skipColumns{from: r.From, to: r.To, at: r.At.UnixMicro(), cause: string(r.Cause)}
}

func (c skipColumns) decode() *store.SkippedRange {
	if c.cause == "" {
		return nil
	}
	return &store.SkippedRange{From: c.from, To: c.to, Cause: store.SkipCause(c.cause), At: fromMicros(c.at)}
}

// readParked reads what r names of one stream's parked events, inside the
// open write transaction.
func (w *writer) readParked(consumer, stream string, r store.ParkedRead) (store.ParkedView, error) {
	bg := context.Background()
	var v store.ParkedView
	if r.ConsumerBytes {
		err := w.conn.QueryRowContext(bg, `SELECT COALESCE(SUM(payload_bytes), 0) FROM dedup_parked WHERE consumer = $1`,
			consumer).Scan(&v.ConsumerBytes)
		if err != nil {
			return v, err
		}
	}
	if r.Oldest {
		var oldest int64
		err := w.conn.QueryRowContext(bg, `SELECT COALESCE(MIN(parked_at), 0) FROM dedup_parked WHERE consumer = $1 AND stream = $2`,
			consumer, stream).Scan(&oldest)
		if err != nil {
			return v, err
		}
		if oldest != 0 {
			v.OldestParkedAt = fromMicros(oldest)
		}
	}
	if r.To < r.From {
		return v, nil
	}
	rows, err := w.conn.QueryContext(bg, sqlstmt.ParkedEvents(r), consumer, stream, r.From, r.To)
	if err != nil {
		return v, err
	}
	v.Events, err = scanParked(rows, consumer, stream, r.Payloads)
	return v, err
}

// scanParked reads rows of sqlstmt.ParkedEventColumns (and payload, with
// payloads) of one stream.
func scanParked(rows *sql.Rows, consumer, stream string, payloads bool) ([]store.ParkedEvent, error) {
	defer rows.Close()
	var out []store.ParkedEvent
	for rows.Next() {
		ev := store.ParkedEvent{Consumer: consumer, Stream: stream}
		if err := scanParkedEvent(rows, &ev, payloads); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// scanParkedEvent reads into ev a row of the columns dest points at, then
// sqlstmt.ParkedEventColumns, then with payload the payload; an empty
// digest or payload is nil, as stored.
func scanParkedEvent(row sqlstmt.Row, ev *store.ParkedEvent, payload bool, dest ...any) error {
	var at int64
	dest = append(dest, &ev.Sequence, &ev.Digest, &ev.PayloadBytes, &at)
	if payload {
		dest = append(dest, &ev.Payload)
	}
	if err := row.Scan(dest...); err != nil {
		return err
	}
	ev.ParkedAt = fromMicros(at)
	if len(ev.Digest) == 0 {
		ev.Digest = nil
	}
	if len(ev.Payload) == 0 {
		ev.Payload = nil
	}
	return nil
}

// writeParked applies a decision's parked writes, after its stream's.
func (w *writer) writeParked(consumer, stream string, d store.StreamDecision) error {
	bg := context.Background()
	if d.UnparkAll {
		if _, err := w.conn.ExecContext(bg, `DELETE FROM dedup_parked WHERE consumer = $1 AND stream = $2`, consumer, stream); err != nil {
			return err
		}
	}
	for _, seq := range d.Unpark {
		if _, err := w.conn.ExecContext(bg, `DELETE FROM dedup_parked WHERE consumer = $1 AND stream = $2 AND sequence = $3`,
			consumer, stream, seq); err != nil {
			return err
		}
	}
	if ev := d.Park; ev != nil {
		_, err := w.conn.ExecContext(bg, insertParkedSQL, consumer, stream, ev.Sequence, notNil(ev.Digest),
			notNil(ev.Payload), ev.PayloadBytes, ev.ParkedAt.UnixMicro())
		return err
	}
	return nil
}

func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// claimAnyParked hands out a ready parked event of the first stream of
// the consumer that has one.
func (s *Store) claimAnyParked(ctx context.Context, p store.ClaimParkedParams) (store.StreamDecision, error) {
	one := func(ctx context.Context, p store.ClaimParkedParams) (store.StreamDecision, error) {
		return s.applyStream(ctx, p.Consumer, p.Stream, p)
	}
	candidates, err := s.readyStreams(ctx, sqlstmt.SQLite, p.Consumer)
	if err != nil {
		return store.StreamDecision{}, err
	}
	return store.ClaimParkedOf(ctx, p, candidates, one)
}

// readyStreams lists the streams of consumer that ClaimParked may pick
// (store.ParkedReady), on d's clock.
func (s *Store) readyStreams(ctx context.Context, d sqlstmt.Dialect, consumer string) ([]string, error) {
	return queryAll(ctx, s, "finding parked events", sqlstmt.ReadyStreams(d), d.Args(consumer), sqlstmt.ScanStream)
}

// ListParked pages through a live stream's parked events.
func (s *Store) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, `SELECT `+sqlstmt.ParkedEventColumns+` FROM dedup_parked p
WHERE p.consumer = $1 AND p.stream = $2 AND p.sequence > $3
  AND EXISTS (SELECT 1 FROM dedup_streams s WHERE s.consumer = p.consumer AND s.stream = p.stream AND s.expires_at > $4)
ORDER BY p.sequence LIMIT `+strconv.Itoa(p.Limit), p.Consumer, p.Stream, p.AfterSequence, store.Now(time.Now()).UnixMicro())
	if err != nil {
		return nil, dbError("list parked", err)
	}
	out, err := scanParked(rows, p.Consumer, p.Stream, false)
	if err != nil {
		return nil, dbError("list parked", err)
	}
	return out, nil
}

// parkedSpan reads the span of a stream's parked events from the read
// pool.
func (s *Store) parkedSpan(ctx context.Context, consumer, stream string) (store.ParkedSpan, error) {
	var (
		span   store.ParkedSpan
		oldest int64
	)
	if err := s.r.db.QueryRowContext(ctx, summaryParkedSQL, consumer, stream).Scan(&span.Lowest, &span.Highest, &oldest); err != nil {
		return store.ParkedSpan{}, dbError("parked summary", err)
	}
	span.Oldest = fromMicros(oldest)
	return span, nil
}

// ListOpenGaps lists live dense streams whose parked events wait on a gap.
func (s *Store) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	now := store.Now(time.Now())
	rows, err := s.r.db.QueryContext(ctx, `SELECT s.consumer, s.stream,
       (SELECT MIN(sequence) FROM dedup_parked p WHERE p.consumer = s.consumer AND p.stream = s.stream),
       (SELECT MIN(parked_at) FROM dedup_parked p WHERE p.consumer = s.consumer AND p.stream = s.stream),
       `+streamFields+`
FROM dedup_streams s
WHERE s.parked > 0 AND s.mode = 'DENSE' AND s.expires_at > $3 AND (s.consumer, s.stream) > ($1, $2)
  AND NOT EXISTS (SELECT 1 FROM dedup_parked p
                  WHERE p.consumer = s.consumer AND p.stream = s.stream AND p.sequence = s.high_water + 1)
ORDER BY s.consumer, s.stream LIMIT `+strconv.Itoa(max(p.Limit, 1)), p.AfterConsumer, p.AfterStream, now.UnixMicro())
	if err != nil {
		return nil, dbError("list open gaps", err)
	}
	defer rows.Close()
	var out []store.OpenGap
	for rows.Next() {
		var (
			st          store.Stream
			low, oldest sql.NullInt64
		)
		if err := scanStreamFields(rows, &st, &st.Consumer, &st.Stream, &low, &oldest); err != nil {
			return nil, dbError("list open gaps", err)
		}
		if g, open := store.OpenGapOf(st, low.Int64, fromMicros(oldest.Int64), now); open {
			out = append(out, g)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("list open gaps", err)
	}
	return out, nil
}

// ParkedTotals sums every consumer's parked events of live streams.
func (s *Store) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	return queryAll(ctx, s, "parked totals", `SELECT p.consumer, COUNT(*), SUM(p.payload_bytes), MIN(p.parked_at)
FROM dedup_parked p JOIN dedup_streams s ON s.consumer = p.consumer AND s.stream = p.stream
WHERE s.expires_at > $1 GROUP BY p.consumer ORDER BY p.consumer`, []any{store.Now(time.Now()).UnixMicro()},
		func(row sqlstmt.Row) (store.ConsumerParked, error) {
			var (
				c      store.ConsumerParked
				oldest int64
			)
			err := row.Scan(&c.Consumer, &c.Events, &c.Bytes, &oldest)
			c.OldestParkedAt = fromMicros(oldest)
			return c, err
		})
}
