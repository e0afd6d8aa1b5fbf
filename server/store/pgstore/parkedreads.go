package pgstore

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// The park calls that read, and the search of ClaimParked of any stream.

// claimAnyParked hands out a ready parked event of the first stream of
// the consumer that has one.
func (s *Store) claimAnyParked(ctx context.Context, p store.ClaimParkedParams) (store.StreamDecision, error) {
	one := func(ctx context.Context, p store.ClaimParkedParams) (store.StreamDecision, error) {
		return s.applyStream(ctx, p.Op().Label, p.Consumer, p.Stream, p)
	}
	candidates, err := s.readyStreams(ctx, sqlstmt.Postgres, p.Consumer)
	if err != nil {
		return store.StreamDecision{}, err
	}
	return store.ClaimParkedOf(ctx, p, candidates, one)
}

// readyStreams lists the streams of consumer that ClaimParked may pick
// (store.ParkedReady), on d's clock.
func (s *Store) readyStreams(ctx context.Context, d sqlstmt.Dialect, consumer string) ([]string, error) {
	return queryAll(ctx, s, "find parked", sqlstmt.ReadyStreams(d), d.Args(consumer), sqlstmt.ScanStream)
}

// ListParked pages through a live stream's parked events.
func (s *Store) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.ParkedEvent
	err := s.withRetry(ctx, "list parked", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT p.sequence, p.digest, p.payload_bytes, p.parked_at FROM dedup_parked p
JOIN dedup_streams s ON s.consumer = p.consumer AND s.stream = p.stream AND s.expires_at > statement_timestamp()
WHERE p.consumer = $1 AND p.stream = $2 AND p.sequence > $3
ORDER BY p.sequence LIMIT `+strconv.Itoa(p.Limit), p.Consumer, p.Stream, p.AfterSequence)
		if err != nil {
			return err
		}
		out, err = collectParked(rows, p.Consumer, p.Stream, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// parkedSpan reads the span of a stream's parked events.
func (s *Store) parkedSpan(ctx context.Context, consumer, stream string) (store.ParkedSpan, error) {
	var (
		span   store.ParkedSpan
		oldest *time.Time
	)
	err := s.withRetry(ctx, "parked summary", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT COALESCE(MIN(sequence), 0), COALESCE(MAX(sequence), 0), MIN(parked_at)
FROM dedup_parked WHERE consumer = $1 AND stream = $2`, consumer, stream).Scan(&span.Lowest, &span.Highest, &oldest)
	})
	if err != nil {
		return store.ParkedSpan{}, err
	}
	if oldest != nil {
		span.Oldest = store.Now(*oldest)
	}
	return span, nil
}

// ListOpenGaps lists live dense streams whose parked events wait on a gap.
func (s *Store) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	var out []store.OpenGap
	err := s.withRetry(ctx, "list open gaps", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT `+streamColumns+`,
       (SELECT MIN(sequence) FROM dedup_parked p WHERE p.consumer = s.consumer AND p.stream = s.stream),
       (SELECT MIN(parked_at) FROM dedup_parked p WHERE p.consumer = s.consumer AND p.stream = s.stream),
       statement_timestamp()
FROM dedup_streams s
WHERE s.parked > 0 AND s.mode = 'DENSE' AND s.expires_at > statement_timestamp()
  AND (s.consumer, s.stream) > ($1, $2)
  AND NOT EXISTS (SELECT 1 FROM dedup_parked p
                  WHERE p.consumer = s.consumer AND p.stream = s.stream AND p.sequence = s.high_water + 1)
ORDER BY s.consumer, s.stream LIMIT `+strconv.Itoa(max(p.Limit, 1)), p.AfterConsumer, p.AfterStream)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.OpenGap, error) {
			var (
				low         int64
				oldest, now time.Time
			)
			st, err := scanStream(row, &low, &oldest, &now)
			g, _ := store.OpenGapOf(st, low, store.Now(oldest), store.Now(now))
			return g, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParkedTotals sums every consumer's parked events of live streams.
func (s *Store) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	var out []store.ConsumerParked
	err := s.withRetry(ctx, "parked totals", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT p.consumer, COUNT(*)::BIGINT, SUM(p.payload_bytes)::BIGINT, MIN(p.parked_at)
FROM dedup_parked p JOIN dedup_streams s ON s.consumer = p.consumer AND s.stream = p.stream
WHERE s.expires_at > statement_timestamp() GROUP BY p.consumer ORDER BY p.consumer`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ConsumerParked, error) {
			var c store.ConsumerParked
			err := row.Scan(&c.Consumer, &c.Events, &c.Bytes, &c.OldestParkedAt)
			c.OldestParkedAt = store.Now(c.OldestParkedAt)
			return c, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
