package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlfilter"
)

// dialect is how the shared admin filters are written here. The clock is
// this process's, read once per call and bound as $1. SQLite compares TEXT
// bytewise (BINARY collation), so a key prefix is a range on the primary
// key (sqlfilter.KeyRange) rather than LIKE (case-insensitive for ASCII in
// SQLite) or GLOB (with its own escaping).
var dialect = sqlfilter.Dialect{
	Now:       "$1",
	Time:      func(t time.Time) any { return store.Now(t).UnixMicro() },
	KeyPrefix: sqlfilter.KeyRange,
}

const (
	statsSQL = `SELECT consumer,
    count(CASE WHEN live AND state = 'PENDING' THEN 1 END),
    count(CASE WHEN live AND state = 'COMPLETED' THEN 1 END),
    count(CASE WHEN live AND state = 'REJECTED' THEN 1 END),
    count(CASE WHEN live AND state = 'RELEASED' THEN 1 END),
    count(CASE WHEN live AND state = 'PENDING' AND lease_expires_at <= $1 THEN 1 END),
    min(CASE WHEN live AND state = 'PENDING' THEN updated_at END),
    count(CASE WHEN NOT live THEN 1 END)
FROM (SELECT consumer, state, updated_at, lease_expires_at, expires_at > $1 AS live
      FROM dedup_records %s)
GROUP BY consumer
ORDER BY consumer`
)

// ListRecords lists live records in key order, one keyset page at a time,
// on the read pool.
func (s *Store) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, errClosed
	}
	q := sqlfilter.NewQuery(store.Now(time.Now()).UnixMicro())
	sqlfilter.ListRecords(dialect, q, p)
	rows, err := s.r.db.QueryContext(ctx, `SELECT key, `+recordFields+` FROM dedup_records WHERE `+
		q.Clause()+` ORDER BY key LIMIT `+strconv.Itoa(p.Limit), q.Args()...)
	if err != nil {
		return nil, dbError("list records", err)
	}
	defer rows.Close()
	var recs []store.Record
	for rows.Next() {
		r := store.Record{Consumer: p.Consumer}
		if err := scanFields(rows, &r, &r.Key); err != nil {
			return nil, dbError("list records", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("list records", err)
	}
	return recs, nil
}

// PurgeBatch deletes one batch in one transaction on the writer. Like the
// reaper's batches, the DELETE watches ctx and the COMMIT does not.
func (s *Store) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	if err := p.Validate(true); err != nil {
		return 0, err
	}
	var deleted int64
	err := s.w.write(ctx, func() error {
		q := sqlfilter.NewQuery(store.Now(time.Now()).UnixMicro())
		sqlfilter.Purge(dialect, q, p)
		where := q.Clause()
		res, err := s.w.conn.ExecContext(ctx, `DELETE FROM dedup_records WHERE `+where+
			` AND (consumer, key) IN (SELECT consumer, key FROM dedup_records WHERE `+where+
			` LIMIT `+strconv.Itoa(p.Limit)+`)`, q.Args()...)
		if err == nil {
			deleted, err = res.RowsAffected()
		}
		if err != nil {
			return dbError("purging records", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int(deleted), nil
}

// CountPurge counts what PurgeBatch would delete, on the read pool.
func (s *Store) CountPurge(ctx context.Context, p store.PurgeParams) (int64, error) {
	if err := p.Validate(false); err != nil {
		return 0, err
	}
	if s.closed.Load() {
		return 0, errClosed
	}
	q := sqlfilter.NewQuery(store.Now(time.Now()).UnixMicro())
	sqlfilter.Purge(dialect, q, p)
	var n int64
	err := s.r.db.QueryRowContext(ctx, `SELECT count(*) FROM dedup_records WHERE `+q.Clause(), q.Args()...).Scan(&n)
	if err != nil {
		return 0, dbError("counting records to purge", err)
	}
	return n, nil
}

// Stats counts records per consumer in one grouped query on the read pool.
func (s *Store) Stats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	// Two texts, so that one consumer's stats seek to it in the primary key.
	text, args := fmt.Sprintf(statsSQL, ""), []any{store.Now(time.Now()).UnixMicro()}
	if consumer != "" {
		text, args = fmt.Sprintf(statsSQL, "WHERE consumer = $2"), append(args, consumer)
	}
	rows, err := s.r.db.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, dbError("stats", err)
	}
	defer rows.Close()
	var stats []store.ConsumerStats
	for rows.Next() {
		var (
			c      store.ConsumerStats
			oldest sql.NullInt64
		)
		if err := rows.Scan(&c.Consumer, &c.Pending, &c.Completed, &c.Rejected, &c.Released,
			&c.PendingLeaseExpired, &oldest, &c.Expired); err != nil {
			return nil, dbError("stats", err)
		}
		if oldest.Valid {
			c.OldestPendingAt = fromMicros(oldest.Int64)
		}
		stats = append(stats, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("stats", err)
	}
	return stats, nil
}
