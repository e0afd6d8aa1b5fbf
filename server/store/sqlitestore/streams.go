package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// The statements on dedup_streams. Like keys, every write reads the row,
// lets store.ApplyStream decide and writes the result inside one IMMEDIATE
// transaction on the single write connection.
const (
	streamFields = `mode, high_water, last_outcome, rejection_reason, rejection_message, rejection_detail,
       finished_token, rejected, in_flight, digest, fencing_token, owner,
       lease_expires_at, created_at, updated_at, expires_at,
       parked, parked_bytes, skipped, skip_from, skip_to, skip_cause, skipped_at`

	selectStreamSQL = `SELECT ` + streamFields + ` FROM dedup_streams WHERE consumer = $1 AND stream = $2`

	upsertStreamSQL = `INSERT INTO dedup_streams (consumer, stream, ` + streamFields + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
       $19, $20, $21, $22, $23, $24, $25)
ON CONFLICT (consumer, stream) DO UPDATE SET
       mode = excluded.mode, high_water = excluded.high_water, last_outcome = excluded.last_outcome,
       rejection_reason = excluded.rejection_reason, rejection_message = excluded.rejection_message,
       rejection_detail = excluded.rejection_detail, finished_token = excluded.finished_token,
       rejected = excluded.rejected, in_flight = excluded.in_flight, digest = excluded.digest,
       fencing_token = excluded.fencing_token, owner = excluded.owner,
       lease_expires_at = excluded.lease_expires_at, created_at = excluded.created_at,
       updated_at = excluded.updated_at, expires_at = excluded.expires_at,
       parked = excluded.parked, parked_bytes = excluded.parked_bytes, skipped = excluded.skipped,
       skip_from = excluded.skip_from, skip_to = excluded.skip_to, skip_cause = excluded.skip_cause,
       skipped_at = excluded.skipped_at`

	deleteExpiredStreamsSQL = `DELETE FROM dedup_streams
WHERE expires_at <= $1 AND (consumer, stream) IN (
    SELECT consumer, stream FROM dedup_streams WHERE expires_at <= $1 LIMIT $2)`
)

// ApplyStream runs a stream command on the write connection.
func (s *Store) ApplyStream(ctx context.Context, cmd store.StreamCommand) (store.StreamDecision, error) {
	if c, ok := cmd.(store.ClaimParkedParams); ok && c.Stream == "" {
		return s.claimAnyParked(ctx, c)
	}
	consumer, stream := store.StreamOf(cmd)
	return s.applyStream(ctx, consumer, stream, cmd)
}

// applyStream runs a stream command on the write connection: with group
// commit in the transaction of the commands queued beside it, as keys'.
func (s *Store) applyStream(ctx context.Context, consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	var (
		d   store.StreamDecision
		err error
	)
	if s.w.maxBatch > 1 {
		sw := &streamWrite{queueEntry: queueEntry{consumer: consumer}, stream: stream, cmd: cmd}
		s.w.runQueued(ctx, []queued{sw})
		d, err = sw.d, sw.err
	} else {
		err = s.w.write(ctx, func() error {
			var err error
			d, err = s.w.decideStream(consumer, stream, cmd)
			return err
		})
	}
	if err != nil {
		return store.StreamDecision{}, err
	}
	return d, nil
}

// decideStream reads the stream, asks store.ApplyStream and writes the
// decision, inside the open transaction.
func (w *writer) decideStream(consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	bg := context.Background()
	stored, err := scanStream(w.conn.QueryRowContext(bg, selectStreamSQL, consumer, stream), consumer, stream)
	if err != nil {
		return store.StreamDecision{}, dbError("reading stream", err)
	}
	now := time.Now()
	var view store.ParkedView
	if r, need := store.ParkedReadFor(stored, cmd, now); need {
		if view, err = w.readParked(consumer, stream, r); err != nil {
			return store.StreamDecision{}, dbError("reading parked events", err)
		}
	}
	d, err := store.ApplyStreamParked(stored, view, cmd, now)
	if err != nil || !d.Write {
		return d, err
	}
	if _, err := w.conn.ExecContext(bg, upsertStreamSQL, streamArgs(&d.Stream)...); err != nil {
		return store.StreamDecision{}, dbError("writing stream", err)
	}
	if err := w.writeParked(consumer, stream, d); err != nil {
		return store.StreamDecision{}, dbError("writing parked events", err)
	}
	return d, nil
}

// ReadStream returns a live stream and, when asked, its parked summary.
func (s *Store) ReadStream(ctx context.Context, p store.ReadStreamParams) (store.StreamRead, error) {
	return store.ReadStreamOf(ctx, p, s.liveStream, s.parkedSpan)
}

// liveStream returns a live stream from the read pool.
func (s *Store) liveStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	if s.closed.Load() {
		return store.Stream{}, errClosed
	}
	st, err := scanStream(s.r.db.QueryRowContext(ctx, selectStreamSQL, consumer, stream), consumer, stream)
	if err != nil {
		return store.Stream{}, dbError("get stream", err)
	}
	return store.LiveStream(st, time.Now())
}

// ListStreams lists live streams in stream order, one keyset page at a time.
func (s *Store) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := `SELECT stream, ` + streamFields + ` FROM dedup_streams
WHERE consumer = $1 AND stream > $2 AND expires_at > $3`
	if p.LeaseExpired {
		q += ` AND in_flight <> 0 AND lease_expires_at <= $3`
	}
	q += ` ORDER BY stream LIMIT ` + strconv.Itoa(p.Limit)
	return queryAll(ctx, s, "list streams", q, []any{p.Consumer, p.AfterStream, store.Now(time.Now()).UnixMicro()},
		func(row sqlstmt.Row) (store.Stream, error) {
			st := store.Stream{Consumer: p.Consumer}
			err := scanStreamFields(row, &st, &st.Stream)
			return st, err
		})
}

// deleteExpiredStreams deletes at most limit expired streams.
func (s *Store) deleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var deleted int64
	err := s.w.write(ctx, func() error {
		now := store.Now(time.Now()).UnixMicro()
		// Parked events go with their stream (SQLite enforces no foreign
		// keys here): those of every expired stream, then the streams.
		if _, err := s.w.conn.ExecContext(ctx, deleteExpiredParkedSQL, now); err != nil {
			return dbError("deleting expired parked events", err)
		}
		res, err := s.w.conn.ExecContext(ctx, deleteExpiredStreamsSQL, now, limit)
		if err == nil {
			deleted, err = res.RowsAffected()
		}
		return dbErrorOrNil("deleting expired streams", err)
	})
	return int(deleted), err
}

func dbErrorOrNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return dbError(op, err)
}

// scanStream decodes a row of selectStreamSQL; nil, nil when there is none.
func scanStream(row *sql.Row, consumer, stream string) (*store.Stream, error) {
	st := &store.Stream{Consumer: consumer, Stream: stream}
	err := scanStreamFields(row, st)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// scanStreamFields decodes lead followed by streamFields into st.
func scanStreamFields(row rowScanner, st *store.Stream, lead ...any) error {
	var (
		mode, outcome                    string
		reason, message                  sql.NullString
		detail                           []byte
		lease, created, updated, expires int64
		skip                             skipColumns
	)
	err := row.Scan(append(lead, &mode, &st.HighWater, &outcome, &reason, &message, &detail,
		&st.FinishedToken, &st.Rejected, &st.InFlight, &st.Digest, &st.FencingToken, &st.Owner,
		&lease, &created, &updated, &expires,
		&st.Parked, &st.ParkedBytes, &st.Skipped, &skip.from, &skip.to, &skip.cause, &skip.at)...)
	if err != nil {
		return err
	}
	st.LastSkipped = skip.decode()
	st.Mode, st.LastOutcome = store.StreamMode(mode), store.State(outcome)
	if st.LastOutcome == store.Rejected {
		st.LastRejection = &store.Rejection{Reason: reason.String, Message: message.String}
		if len(detail) > 0 {
			st.LastRejection.Detail = detail
		}
	}
	if len(st.Digest) == 0 {
		st.Digest = nil
	}
	st.LeaseExpiresAt, st.CreatedAt = fromMicros(lease), fromMicros(created)
	st.UpdatedAt, st.ExpiresAt = fromMicros(updated), fromMicros(expires)
	return nil
}

// streamArgs are the arguments of upsertStreamSQL for st.
func streamArgs(st *store.Stream) []any {
	var reason, message, detail any
	if j := st.LastRejection; j != nil {
		reason, message, detail = j.Reason, j.Message, j.Detail
	}
	digest := st.Digest
	if digest == nil {
		digest = []byte{}
	}
	skip := encodeSkip(st.LastSkipped)
	return []any{st.Consumer, st.Stream, string(st.Mode), st.HighWater, string(st.LastOutcome),
		reason, message, detail, st.FinishedToken, st.Rejected, st.InFlight, digest, st.FencingToken, st.Owner,
		st.LeaseExpiresAt.UnixMicro(), st.CreatedAt.UnixMicro(), st.UpdatedAt.UnixMicro(), st.ExpiresAt.UnixMicro(),
		st.Parked, st.ParkedBytes, st.Skipped, skip.from, skip.to, skip.cause, skip.at}
}
