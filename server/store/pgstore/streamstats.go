package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// streamStatsSQL counts live streams per consumer in one pass; expired
// rows are left out by the WHERE, so a consumer with none live is absent.
// count(CASE ...) for an INT on both databases, as in statsSQL.
const streamStatsSQL = `SELECT consumer,
    count(*),
    count(CASE WHEN in_flight <> 0 THEN 1 END),
    count(CASE WHEN in_flight <> 0 AND lease_expires_at <= now THEN 1 END),
    min(CASE WHEN in_flight <> 0 THEN updated_at END)
FROM dedup_streams, (SELECT statement_timestamp() AS now) AS clock
WHERE expires_at > now %s
GROUP BY consumer
ORDER BY consumer`

// StreamStats counts live streams per consumer.
func (s *Store) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	// Two texts, as for Stats, so one consumer's count seeks to it.
	sql, args := fmt.Sprintf(streamStatsSQL, ""), []any(nil)
	if consumer != "" {
		sql, args = fmt.Sprintf(streamStatsSQL, "AND consumer = $1"), []any{consumer}
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
