package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

const (
	policyColumns = `consumer, completed_ttl_us, rejected_ttl_us, released_ttl_us,
    default_lease_ttl_us, max_lease_ttl_us, max_result_bytes, require_digest, updated_at`

	// putPolicySQL creates or replaces a policy in one statement. INSERT ...
	// ON CONFLICT DO UPDATE, not CockroachDB's UPSERT, which PostgreSQL
	// lacks; both run it atomically, without a serialization failure on
	// PostgreSQL's default READ COMMITTED.
	putPolicySQL = `INSERT INTO dedup_policies (` + policyColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, statement_timestamp())
ON CONFLICT (consumer) DO UPDATE SET
    completed_ttl_us = excluded.completed_ttl_us, rejected_ttl_us = excluded.rejected_ttl_us,
    released_ttl_us = excluded.released_ttl_us, default_lease_ttl_us = excluded.default_lease_ttl_us,
    max_lease_ttl_us = excluded.max_lease_ttl_us, max_result_bytes = excluded.max_result_bytes,
    require_digest = excluded.require_digest, updated_at = excluded.updated_at
RETURNING ` + policyColumns

	getPolicySQL    = `SELECT ` + policyColumns + ` FROM dedup_policies WHERE consumer = $1`
	listPoliciesSQL = `SELECT ` + policyColumns + ` FROM dedup_policies ORDER BY consumer`
	deletePolicySQL = `DELETE FROM dedup_policies WHERE consumer = $1 RETURNING ` + policyColumns
)

// PutPolicy creates or replaces a consumer's policy.
func (s *Store) PutPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	args := []any{p.Consumer,
		p.CompletedTTL.Microseconds(), p.RejectedTTL.Microseconds(), p.ReleasedTTL.Microseconds(),
		p.DefaultLeaseTTL.Microseconds(), p.MaxLeaseTTL.Microseconds(), p.MaxResultBytes, p.RequireDigest}
	return s.onePolicy(ctx, "put policy", putPolicySQL, args...)
}

// GetPolicy returns a consumer's policy, or store.ErrNoPolicy.
func (s *Store) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return s.onePolicy(ctx, "get policy", getPolicySQL, consumer)
}

// DeletePolicy deletes a consumer's policy and returns it, or
// store.ErrNoPolicy.
func (s *Store) DeletePolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return s.onePolicy(ctx, "delete policy", deletePolicySQL, consumer)
}

// ListPolicies returns every policy, ordered by consumer.
func (s *Store) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	var ps []store.ConsumerPolicy
	err := s.withRetry(ctx, "list policies", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, listPoliciesSQL)
		if err != nil {
			return err
		}
		ps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ConsumerPolicy, error) {
			return scanPolicy(row)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// onePolicy runs a statement that returns at most one policy row; no row
// is store.ErrNoPolicy.
func (s *Store) onePolicy(ctx context.Context, op, sql string, args ...any) (store.ConsumerPolicy, error) {
	var p store.ConsumerPolicy
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		var err error
		p, err = scanPolicy(s.pool.QueryRow(ctx, sql, args...))
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

func scanPolicy(row pgx.Row) (store.ConsumerPolicy, error) {
	var (
		p                             store.ConsumerPolicy
		completed, rejected, released int64
		defaultLease, maxLease        int64
		updated                       time.Time
	)
	err := row.Scan(&p.Consumer, &completed, &rejected, &released, &defaultLease, &maxLease,
		&p.MaxResultBytes, &p.RequireDigest, &updated)
	p.CompletedTTL = time.Duration(completed) * time.Microsecond
	p.RejectedTTL = time.Duration(rejected) * time.Microsecond
	p.ReleasedTTL = time.Duration(released) * time.Microsecond
	p.DefaultLeaseTTL = time.Duration(defaultLease) * time.Microsecond
	p.MaxLeaseTTL = time.Duration(maxLease) * time.Microsecond
	p.UpdatedAt = store.Now(updated)
	return p, err
}
