package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// Both read only the rows of a partial index (dedup_records_pending_lease,
// dedup_streams_in_flight): their WHERE repeats the index's predicate so
// the planner may use it.
const (
	pendingLeasesSQL = `SELECT consumer, count(*),
    count(CASE WHEN lease_expires_at <= $1 THEN 1 END), min(updated_at)
FROM dedup_records
WHERE state = 'PENDING' AND expires_at > $1
GROUP BY consumer
ORDER BY consumer`

	inFlightLeasesSQL = `SELECT consumer, count(*),
    count(CASE WHEN lease_expires_at <= $1 THEN 1 END), min(updated_at)
FROM dedup_streams
WHERE in_flight <> 0 AND expires_at > $1
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
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, query, store.Now(time.Now()).UnixMicro())
	if err != nil {
		return nil, dbError(op, err)
	}
	defer rows.Close()
	var out []store.LeaseStats
	for rows.Next() {
		var (
			l      store.LeaseStats
			oldest sql.NullInt64
		)
		if err := rows.Scan(&l.Consumer, &l.Held, &l.Expired, &oldest); err != nil {
			return nil, dbError(op, err)
		}
		if oldest.Valid {
			l.OldestUpdatedAt = fromMicros(oldest.Int64)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(op, err)
	}
	return out, nil
}
