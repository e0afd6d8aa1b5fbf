package pgstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// The SQL of streams: the same single-row discipline as keys, through the
// same loop (compareAndSet, on streamTable), which a read-free write
// spares when it can (streamwrite.go).
const (
	streamColumns = `consumer, stream, mode, high_water, last_outcome,
    rejection_reason, rejection_message, rejection_detail, finished_token, rejected,
    in_flight, digest, fencing_token, owner, lease_expires_at, created_at, updated_at, expires_at,
    parked, parked_bytes, skipped, skip_from, skip_to, skip_cause, skipped_at`

	selectStreamVersionedSQL = `SELECT ` + streamColumns + `, row_version, statement_timestamp()
FROM dedup_streams WHERE consumer = $1 AND stream = $2`

	insertStreamSQL = `INSERT INTO dedup_streams (` + streamColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
    $19, $20, $21, $22, $23, $24, $25)
ON CONFLICT (consumer, stream) DO NOTHING
RETURNING ` + streamColumns

	updateStreamSQL = `UPDATE dedup_streams SET
    mode = $3, high_water = $4, last_outcome = $5, rejection_reason = $6, rejection_message = $7,
    rejection_detail = $8, finished_token = $9, rejected = $10, in_flight = $11, digest = $12,
    fencing_token = $13, owner = $14, lease_expires_at = $15, created_at = $16, updated_at = $17,
    expires_at = $18, parked = $19, parked_bytes = $20, skipped = $21, skip_from = $22, skip_to = $23,
    skip_cause = $24, skipped_at = $25, row_version = row_version + 1
WHERE consumer = $1 AND stream = $2 AND row_version = $26
RETURNING ` + streamColumns

	// listStreamsSQL pages on the primary key; %s is the lease filter.
	listStreamsSQL = `SELECT ` + streamColumns + ` FROM dedup_streams
WHERE consumer = $1 AND stream > $2 AND expires_at > statement_timestamp()`

	deleteExpiredStreamsSQL = `DELETE FROM dedup_streams
WHERE expires_at <= now()
  AND (consumer, stream) IN (
    SELECT consumer, stream FROM dedup_streams WHERE expires_at <= now() LIMIT $1)`
)

// ApplyStream runs a stream command (streamwrite.go), retried under its
// operation's label; a ClaimParked of any stream tries the streams with a
// ready event.
func (s *Store) ApplyStream(ctx context.Context, cmd store.StreamCommand) (store.StreamDecision, error) {
	if c, ok := cmd.(store.ClaimParkedParams); ok && c.Stream == "" {
		return s.claimAnyParked(ctx, c)
	}
	consumer, stream := store.StreamOf(cmd)
	return s.applyStream(ctx, cmd.Op().Label, consumer, stream, cmd)
}

// ReadStream returns a live stream and, when asked, its parked summary.
func (s *Store) ReadStream(ctx context.Context, p store.ReadStreamParams) (store.StreamRead, error) {
	return store.ReadStreamOf(ctx, p, s.liveStream, s.parkedSpan)
}

// liveStream returns a live stream, judged on the database's clock.
func (s *Store) liveStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	var (
		st      store.Stream
		version int64
		now     time.Time
	)
	err := s.withRetry(ctx, "get stream", func(ctx context.Context) error {
		var err error
		st, err = scanStream(s.pool.QueryRow(ctx, selectStreamVersionedSQL, consumer, stream), &version, &now)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Stream{}, err
	}
	return store.LiveStream(&st, now)
}

// ListStreams lists live streams in stream order, one keyset page at a time.
func (s *Store) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := listStreamsSQL
	if p.LeaseExpired {
		q += ` AND in_flight <> 0 AND lease_expires_at <= statement_timestamp()`
	}
	q += ` ORDER BY stream LIMIT ` + strconv.Itoa(p.Limit)
	var out []store.Stream
	err := s.withRetry(ctx, "list streams", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, q, p.Consumer, p.AfterStream)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Stream, error) {
			return scanStream(row)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanStream reads one row of streamColumns, then the destinations in extra.
func scanStream(row pgx.Row, extra ...any) (store.Stream, error) {
	var (
		st                               store.Stream
		mode, outcome                    string
		reason, message                  *string
		detail                           []byte
		lease, created, updated, expires time.Time
		skip                             skipColumns
	)
	dest := append([]any{&st.Consumer, &st.Stream, &mode, &st.HighWater, &outcome,
		&reason, &message, &detail, &st.FinishedToken, &st.Rejected,
		&st.InFlight, &st.Digest, &st.FencingToken, &st.Owner, &lease, &created, &updated, &expires,
		&st.Parked, &st.ParkedBytes, &st.Skipped, &skip.from, &skip.to, &skip.cause, &skip.at}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Stream{}, err
	}
	st.LastSkipped = skip.decode()
	st.Mode, st.LastOutcome = store.StreamMode(mode), store.State(outcome)
	if st.LastOutcome == store.Rejected {
		st.LastRejection = &store.Rejection{Reason: deref(reason), Message: deref(message)}
		if len(detail) > 0 {
			st.LastRejection.Detail = detail
		}
	}
	if len(st.Digest) == 0 {
		st.Digest = nil
	}
	st.LeaseExpiresAt, st.CreatedAt = store.Now(lease), store.Now(created)
	st.UpdatedAt, st.ExpiresAt = store.Now(updated), store.Now(expires)
	return st, nil
}

// streamArgs are the parameters of insertStreamSQL and updateStreamSQL.
func streamArgs(st store.Stream) []any {
	var (
		reason, message *string
		detail          []byte
	)
	if j := st.LastRejection; j != nil {
		reason, message, detail = &j.Reason, &j.Message, j.Detail
	}
	skip := encodeSkip(st.LastSkipped)
	return []any{st.Consumer, st.Stream, string(st.Mode), st.HighWater, string(st.LastOutcome),
		reason, message, detail, st.FinishedToken, st.Rejected,
		st.InFlight, notNull(st.Digest), st.FencingToken, st.Owner,
		st.LeaseExpiresAt, st.CreatedAt, st.UpdatedAt, st.ExpiresAt,
		st.Parked, st.ParkedBytes, st.Skipped, skip.from, skip.to, skip.cause, skip.at}
}
