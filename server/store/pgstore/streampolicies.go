package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// putStreamPolicy creates or replaces a consumer's stream policy.
func (s *Store) putStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerStreamPolicy{}, err
	}
	return s.oneStreamPolicy(ctx, "put stream policy", sqlstmt.PutStreamPolicy(sqlstmt.Postgres),
		p.Consumer, p.StreamTTL.Microseconds(), string(p.Mode), string(p.Start),
		p.MaxParked, p.GapTimeout.Microseconds(), string(p.OnGapTimeout))
}

// getStreamPolicy returns a consumer's stream policy, or store.ErrNoPolicy.
func (s *Store) getStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return s.oneStreamPolicy(ctx, "get stream policy", sqlstmt.GetStreamPolicy, consumer)
}

// deleteStreamPolicy deletes a consumer's stream policy and returns it.
func (s *Store) deleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return s.oneStreamPolicy(ctx, "delete stream policy", sqlstmt.DeleteStreamPolicy, consumer)
}

func (s *Store) oneStreamPolicy(ctx context.Context, op, sql string, args ...any) (store.ConsumerStreamPolicy, error) {
	var p store.ConsumerStreamPolicy
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		var err error
		p, err = sqlstmt.ScanStreamPolicy(s.pool.QueryRow(ctx, sql, args...), store.Now)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNoPolicy
		}
		return err
	})
	return p, err
}
