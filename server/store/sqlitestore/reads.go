package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// queryAll runs a read of many rows on the read pool and reads each row
// with scan.
func queryAll[T any](ctx context.Context, s *Store, op, text string, args []any, scan func(sqlstmt.Row) (T, error)) ([]T, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, dbError(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, dbError(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(op, err)
	}
	return out, nil
}

// nullTime reads a nullable time in Unix microseconds: zero for NULL.
func nullTime(us sql.NullInt64) time.Time {
	if !us.Valid {
		return time.Time{}
	}
	return fromMicros(us.Int64)
}
