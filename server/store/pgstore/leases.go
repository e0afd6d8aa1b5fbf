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

// Leases sums up the claims in flight of one kind per consumer: the
// pending claims of keys or the streams' claims in flight.
func (s *Store) Leases(ctx context.Context, kind store.LeaseKind) ([]store.LeaseStats, error) {
	switch kind {
	case store.PendingKeyLeases:
		return s.leaseStats(ctx, "pending leases", pendingLeasesSQL)
	case store.InFlightStreamLeases:
		return s.leaseStats(ctx, "in-flight leases", inFlightLeasesSQL)
	}
	return nil, store.ErrUnknownLeaseKind
}

func (s *Store) leaseStats(ctx context.Context, op, query string) ([]store.LeaseStats, error) {
	return queryAll(ctx, s, op, query, nil, func(row sqlstmt.Row) (store.LeaseStats, error) {
		return sqlstmt.ScanLeaseStats(row, nullTime)
	})
}
