package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

const (
	streamPolicyColumns = `consumer, stream_ttl_us, mode, start, updated_at, max_parked, gap_timeout_us, on_gap_timeout`

	// putStreamPolicySQL: INSERT ... ON CONFLICT DO UPDATE, as putPolicySQL.
	putStreamPolicySQL = `INSERT INTO dedup_stream_policies (` + streamPolicyColumns + `)
VALUES ($1, $2, $3, $4, statement_timestamp(), $5, $6, $7)
ON CONFLICT (consumer) DO UPDATE SET
    stream_ttl_us = excluded.stream_ttl_us, mode = excluded.mode, start = excluded.start,
    updated_at = excluded.updated_at, max_parked = excluded.max_parked,
    gap_timeout_us = excluded.gap_timeout_us, on_gap_timeout = excluded.on_gap_timeout
RETURNING ` + streamPolicyColumns

	getStreamPolicySQL    = `SELECT ` + streamPolicyColumns + ` FROM dedup_stream_policies WHERE consumer = $1`
	deleteStreamPolicySQL = `DELETE FROM dedup_stream_policies WHERE consumer = $1 RETURNING ` + streamPolicyColumns
)

// PutStreamPolicy creates or replaces a consumer's stream policy.
func (s *Store) PutStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerStreamPolicy{}, err
	}
	return s.oneStreamPolicy(ctx, "put stream policy", putStreamPolicySQL,
		p.Consumer, p.StreamTTL.Microseconds(), string(p.Mode), string(p.Start),
		p.MaxParked, p.GapTimeout.Microseconds(), string(p.OnGapTimeout))
}

// GetStreamPolicy returns a consumer's stream policy, or store.ErrNoPolicy.
func (s *Store) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return s.oneStreamPolicy(ctx, "get stream policy", getStreamPolicySQL, consumer)
}

// DeleteStreamPolicy deletes a consumer's stream policy and returns it.
func (s *Store) DeleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return s.oneStreamPolicy(ctx, "delete stream policy", deleteStreamPolicySQL, consumer)
}

func (s *Store) oneStreamPolicy(ctx context.Context, op, sql string, args ...any) (store.ConsumerStreamPolicy, error) {
	var p store.ConsumerStreamPolicy
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		var (
			mode, start, onGap string
			ttl, gap           int64
			updated            time.Time
		)
		err := s.pool.QueryRow(ctx, sql, args...).Scan(&p.Consumer, &ttl, &mode, &start, &updated,
			&p.MaxParked, &gap, &onGap)
		p.GapTimeout, p.OnGapTimeout = time.Duration(gap)*time.Microsecond, store.GapAction(onGap)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNoPolicy
		}
		p.StreamTTL = time.Duration(ttl) * time.Microsecond
		p.Mode, p.Start, p.UpdatedAt = store.StreamMode(mode), store.StreamStart(start), store.Now(updated)
		return err
	})
	return p, err
}
