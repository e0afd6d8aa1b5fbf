package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// queryAll runs a read of many rows as one retried unit and reads each row
// with scan.
func queryAll[T any](ctx context.Context, s *Store, op, sql string, args []any, scan func(sqlstmt.Row) (T, error)) ([]T, error) {
	var out []T
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nullTime reads a nullable TIMESTAMPTZ: zero for NULL.
func nullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return store.Now(*t)
}
