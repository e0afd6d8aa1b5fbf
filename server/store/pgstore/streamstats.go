package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// StreamStats counts live streams per consumer.
func (s *Store) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	sql, args := sqlstmt.StreamStats(sqlstmt.Postgres, false), []any(nil)
	if consumer != "" {
		sql, args = sqlstmt.StreamStats(sqlstmt.Postgres, true), []any{consumer}
	}
	var out []store.ConsumerStreamStats
	err := s.withRetry(ctx, "stream stats", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ConsumerStreamStats, error) {
			var (
				c      store.ConsumerStreamStats
				oldest *time.Time
			)
			err := row.Scan(&c.Consumer, &c.Streams, &c.InFlight, &c.LeaseExpired, &oldest)
			if oldest != nil {
				c.OldestInFlightAt = store.Now(*oldest)
			}
			return c, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
