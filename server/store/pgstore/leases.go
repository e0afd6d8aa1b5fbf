package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// The lease sums, as sqlstmt writes them (the tests of the partial indexes
// read them here).
var (
	pendingLeasesSQL  = sqlstmt.PendingLeases(sqlstmt.Postgres)
	inFlightLeasesSQL = sqlstmt.InFlightLeases(sqlstmt.Postgres)
)

// PendingLeases sums up the pending claims per consumer.
func (s *Store) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.leaseStats(ctx, "pending leases", pendingLeasesSQL)
}

// InFlightLeases sums up the streams' claims in flight per consumer.
func (s *Store) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.leaseStats(ctx, "in-flight leases", inFlightLeasesSQL)
}

func (s *Store) leaseStats(ctx context.Context, op, query string) ([]store.LeaseStats, error) {
	var out []store.LeaseStats
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, query)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.LeaseStats, error) {
			var (
				l      store.LeaseStats
				oldest *time.Time
			)
			err := row.Scan(&l.Consumer, &l.Held, &l.Expired, &oldest)
			if oldest != nil {
				l.OldestUpdatedAt = store.Now(*oldest)
			}
			return l, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
