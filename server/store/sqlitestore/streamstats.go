package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// streamStats counts live streams per consumer on the read pool.
func (s *Store) streamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	d := sqlstmt.SQLite
	text, args := sqlstmt.StreamStats(d, false), d.Args()
	if consumer != "" {
		text, args = sqlstmt.StreamStats(d, true), d.Args(consumer)
	}
	return queryAll(ctx, s, "stream stats", text, args, func(row sqlstmt.Row) (store.ConsumerStreamStats, error) {
		return sqlstmt.ScanStreamStats(row, nullTime)
	})
}
