package sqlitestore

import (
	"context"
	"database/sql"

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
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, query, sqlstmt.SQLite.Args()...)
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
