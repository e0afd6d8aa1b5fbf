package pgstore

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// streamStats counts live streams per consumer.
func (s *Store) streamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	sql, args := sqlstmt.StreamStats(sqlstmt.Postgres, false), []any(nil)
	if consumer != "" {
		sql, args = sqlstmt.StreamStats(sqlstmt.Postgres, true), []any{consumer}
	}
	return queryAll(ctx, s, "stream stats", sql, args, func(row sqlstmt.Row) (store.ConsumerStreamStats, error) {
		return sqlstmt.ScanStreamStats(row, nullTime)
	})
}
