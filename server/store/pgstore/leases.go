package pgstore

import (
	"context"

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
	return queryAll(ctx, s, op, query, nil, func(row sqlstmt.Row) (store.LeaseStats, error) {
		return sqlstmt.ScanLeaseStats(row, nullTime)
	})
}
