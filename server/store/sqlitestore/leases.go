package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// PendingLeases sums up the pending claims per consumer.
func (s *Store) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.leaseStats(ctx, "pending leases", sqlstmt.PendingLeases(sqlstmt.SQLite))
}

// InFlightLeases sums up the streams' claims in flight per consumer.
func (s *Store) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.leaseStats(ctx, "in-flight leases", sqlstmt.InFlightLeases(sqlstmt.SQLite))
}

func (s *Store) leaseStats(ctx context.Context, op, query string) ([]store.LeaseStats, error) {
	return queryAll(ctx, s, op, query, sqlstmt.SQLite.Args(), func(row sqlstmt.Row) (store.LeaseStats, error) {
		return sqlstmt.ScanLeaseStats(row, nullTime)
	})
}
