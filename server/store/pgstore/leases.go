package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// Both read only the rows of a partial index (dedup_records_pending_lease,
// dedup_streams_in_flight): their WHERE repeats the index's predicate so
// the planner uses it on PostgreSQL and CockroachDB alike. count(CASE ...)
// for an INT on both, as in statsSQL.
const (
	pendingLeasesSQL = `SELECT consumer, count(*),
    count(CASE WHEN lease_expires_at <= now THEN 1 END), min(updated_at)
FROM dedup_records, (SELECT statement_timestamp() AS now) AS clock
WHERE state = 'PENDING' AND expires_at > now
GROUP BY consumer
ORDER BY consumer`

	inFlightLeasesSQL = `SELECT consumer, count(*),
    count(CASE WHEN lease_expires_at <= now THEN 1 END), min(updated_at)
FROM dedup_streams, (SELECT statement_timestamp() AS now) AS clock
WHERE in_flight <> 0 AND expires_at > now
GROUP BY consumer
ORDER BY consumer`
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
