package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// StreamStats counts live streams per consumer on the read pool.
func (s *Store) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	d := sqlstmt.SQLite
	text, args := sqlstmt.StreamStats(d, false), d.Args()
	if consumer != "" {
		text, args = sqlstmt.StreamStats(d, true), d.Args(consumer)
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
