package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// putKeyPolicy creates or replaces a consumer's policy.
func (s *Store) putKeyPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	args := []any{p.Consumer,
		p.CompletedTTL.Microseconds(), p.RejectedTTL.Microseconds(), p.ReleasedTTL.Microseconds(),
		p.DefaultLeaseTTL.Microseconds(), p.MaxLeaseTTL.Microseconds(), p.MaxResultBytes, p.RequireDigest}
	return s.onePolicy(ctx, "put policy", sqlstmt.PutPolicy(sqlstmt.Postgres), args...)
}

// getKeyPolicy returns a consumer's policy, or store.ErrNoPolicy.
func (s *Store) getKeyPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return s.onePolicy(ctx, "get policy", sqlstmt.GetPolicy, consumer)
}

// deleteKeyPolicy deletes a consumer's policy and returns it, or
// store.ErrNoPolicy.
func (s *Store) deleteKeyPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return s.onePolicy(ctx, "delete policy", sqlstmt.DeletePolicy, consumer)
}

// ListPolicies returns every policy, ordered by consumer.
func (s *Store) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	return queryAll(ctx, s, "list policies", sqlstmt.ListPolicies, nil, func(row sqlstmt.Row) (store.ConsumerPolicy, error) {
		return sqlstmt.ScanPolicy(row, store.Now)
	})
}

// onePolicy runs a statement that returns at most one policy row; no row
// is store.ErrNoPolicy.
func (s *Store) onePolicy(ctx context.Context, op, sql string, args ...any) (store.ConsumerPolicy, error) {
	var p store.ConsumerPolicy
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		var err error
		p, err = sqlstmt.ScanPolicy(s.pool.QueryRow(ctx, sql, args...), store.Now)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNoPolicy
		}
		return err
	})
	if err != nil {
		return store.ConsumerPolicy{}, err
	}
	return p, nil
}
