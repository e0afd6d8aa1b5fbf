package sqlitestore

import (
	"context"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

const (
	streamPolicyColumns = `consumer, stream_ttl_us, mode, start, updated_at`

	putStreamPolicySQL = `INSERT INTO dedup_stream_policies (` + streamPolicyColumns + `)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (consumer) DO UPDATE SET
    stream_ttl_us = excluded.stream_ttl_us, mode = excluded.mode, start = excluded.start,
    updated_at = excluded.updated_at
RETURNING ` + streamPolicyColumns

	getStreamPolicySQL    = `SELECT ` + streamPolicyColumns + ` FROM dedup_stream_policies WHERE consumer = $1`
	deleteStreamPolicySQL = `DELETE FROM dedup_stream_policies WHERE consumer = $1 RETURNING ` + streamPolicyColumns
)

// PutStreamPolicy creates or replaces a consumer's stream policy.
func (s *Store) PutStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerStreamPolicy{}, err
	}
	var stored store.ConsumerStreamPolicy
	err := s.w.write(ctx, func() error {
		var err error
		stored, err = scanStreamPolicy(s.w.conn.QueryRowContext(context.Background(), putStreamPolicySQL,
			p.Consumer, p.StreamTTL.Microseconds(), string(p.Mode), string(p.Start), store.Now(time.Now()).UnixMicro()))
		return policyError("put stream policy", err)
	})
	return stored, err
}

// GetStreamPolicy returns a consumer's stream policy, or store.ErrNoPolicy.
func (s *Store) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	if s.closed.Load() {
		return store.ConsumerStreamPolicy{}, errClosed
	}
	p, err := scanStreamPolicy(s.r.db.QueryRowContext(ctx, getStreamPolicySQL, consumer))
	return p, policyError("get stream policy", err)
}

// DeleteStreamPolicy deletes a consumer's stream policy and returns it.
func (s *Store) DeleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	var p store.ConsumerStreamPolicy
	err := s.w.write(ctx, func() error {
		var err error
		p, err = scanStreamPolicy(s.w.conn.QueryRowContext(context.Background(), deleteStreamPolicySQL, consumer))
		return policyError("delete stream policy", err)
	})
	return p, err
}

func scanStreamPolicy(row rowScanner) (store.ConsumerStreamPolicy, error) {
	var (
		p           store.ConsumerStreamPolicy
		mode, start string
		ttl, upd    int64
	)
	err := row.Scan(&p.Consumer, &ttl, &mode, &start, &upd)
	p.StreamTTL = time.Duration(ttl) * time.Microsecond
	p.Mode, p.Start, p.UpdatedAt = store.StreamMode(mode), store.StreamStart(start), fromMicros(upd)
	return p, err
}
