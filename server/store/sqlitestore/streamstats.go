package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// streamStatsSQL counts live streams per consumer in one pass; expired
// rows are left out by the WHERE, so a consumer with none live is absent.
const streamStatsSQL = `SELECT consumer,
    count(*),
    count(CASE WHEN in_flight <> 0 THEN 1 END),
    count(CASE WHEN in_flight <> 0 AND lease_expires_at <= $1 THEN 1 END),
    min(CASE WHEN in_flight <> 0 THEN updated_at END)
FROM dedup_streams
WHERE expires_at > $1 %s
GROUP BY consumer
ORDER BY consumer`

// StreamStats counts live streams per consumer on the read pool.
func (s *Store) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	text, args := fmt.Sprintf(streamStatsSQL, ""), []any{store.Now(time.Now()).UnixMicro()}
	if consumer != "" {
		text, args = fmt.Sprintf(streamStatsSQL, "AND consumer = $2"), append(args, consumer)
	}
	rows, err := s.r.db.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, dbError("stream stats", err)
	}
	defer rows.Close()
	var out []store.ConsumerStreamStats
	for rows.Next() {
		var (
			c      store.ConsumerStreamStats
			oldest sql.NullInt64
		)
		if err := rows.Scan(&c.Consumer, &c.Streams, &c.InFlight, &c.LeaseExpired, &oldest); err != nil {
			return nil, dbError("stream stats", err)
		}
		if oldest.Valid {
			c.OldestInFlightAt = fromMicros(oldest.Int64)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("stream stats", err)
	}
	return out, nil
}
