package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// putKeyPolicy creates or replaces a consumer's policy, on the writer.
func (s *Store) putKeyPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	var stored store.ConsumerPolicy
	d := sqlstmt.SQLite
	err := s.w.write(ctx, func() error {
		var err error
		stored, err = scanPolicy(s.w.conn.QueryRowContext(context.Background(), sqlstmt.PutPolicy(d), d.Args(p.Consumer,
			p.CompletedTTL.Microseconds(), p.RejectedTTL.Microseconds(), p.ReleasedTTL.Microseconds(),
			p.DefaultLeaseTTL.Microseconds(), p.MaxLeaseTTL.Microseconds(), p.MaxResultBytes,
			p.RequireDigest)...))
		return policyError("put policy", err)
	})
	return stored, err
}

// getKeyPolicy returns a consumer's policy, or store.ErrNoPolicy.
func (s *Store) getKeyPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	if s.closed.Load() {
		return store.ConsumerPolicy{}, errClosed
	}
	p, err := scanPolicy(s.r.db.QueryRowContext(ctx, sqlstmt.GetPolicy, consumer))
	return p, policyError("get policy", err)
}

// deleteKeyPolicy deletes a consumer's policy and returns it, or
// store.ErrNoPolicy.
func (s *Store) deleteKeyPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	var p store.ConsumerPolicy
	err := s.w.write(ctx, func() error {
		var err error
		p, err = scanPolicy(s.w.conn.QueryRowContext(context.Background(), sqlstmt.DeletePolicy, consumer))
		return policyError("delete policy", err)
	})
	return p, err
}

// ListPolicies returns every policy, ordered by consumer.
func (s *Store) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	return queryAll(ctx, s, "list policies", sqlstmt.ListPolicies, nil, func(row sqlstmt.Row) (store.ConsumerPolicy, error) {
		return scanPolicy(row)
	})
}

// policyError turns "no row" into store.ErrNoPolicy.
func policyError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNoPolicy
	}
	return dbError(op, err)
}

func scanPolicy(row rowScanner) (store.ConsumerPolicy, error) {
	return sqlstmt.ScanPolicy(row, fromMicros)
}
