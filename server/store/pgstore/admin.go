package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlfilter"
)

// dialect is how the shared admin filters are written here: the clock is
// the database's, and a key prefix is a key range (see sqlfilter.KeyRange).
var dialect = sqlfilter.Dialect{
	Now:       "statement_timestamp()",
	Time:      func(t time.Time) any { return t },
	KeyPrefix: sqlfilter.KeyRange,
}

const (
	// tombstoneSQL makes a live record expire now. The row stays, so that
	// the next claim's fencing token continues from it (see DeleteRecord);
	// row_version moves so that a compare-and-set racing it starts over and
	// finds the key gone. Liveness is judged on clock_timestamp(), not the
	// statement's start: two deletes of one key queue on its row lock, and
	// PostgreSQL re-checks the second's WHERE on the row the first wrote;
	// judged at its own earlier start, that row was still live, and both
	// deletes reported success.
	tombstoneSQL = `UPDATE dedup_records SET expires_at = statement_timestamp(), row_version = row_version + 1
WHERE consumer = $1 AND key = $2 AND expires_at > clock_timestamp()
RETURNING ` + recordColumns

	// statsSQL counts every consumer's records in one pass over the primary
	// key. count(CASE ...) rather than sum or FILTER: it is INT on both
	// databases (CockroachDB's sum of INT is DECIMAL).
	statsSQL = `SELECT consumer,
    count(CASE WHEN live AND state = 'PENDING' THEN 1 END),
    count(CASE WHEN live AND state = 'COMPLETED' THEN 1 END),
    count(CASE WHEN live AND state = 'REJECTED' THEN 1 END),
    count(CASE WHEN live AND state = 'RELEASED' THEN 1 END),
    count(CASE WHEN live AND state = 'PENDING' AND lease_expires_at <= now THEN 1 END),
    min(CASE WHEN live AND state = 'PENDING' THEN updated_at END),
    count(CASE WHEN NOT live THEN 1 END)
FROM (SELECT consumer, state, updated_at, lease_expires_at, expires_at > now AS live, now
      FROM dedup_records, (SELECT statement_timestamp() AS now) AS clock
      %s) AS r
GROUP BY consumer
ORDER BY consumer`
)

// ListRecords lists live records in key order, one keyset page at a time.
func (s *Store) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := sqlfilter.NewQuery()
	sqlfilter.ListRecords(dialect, q, p)
	sql := `SELECT ` + recordColumns + ` FROM dedup_records WHERE ` + q.Clause() +
		` ORDER BY key LIMIT ` + strconv.Itoa(p.Limit)
	var recs []store.Record
	err := s.withRetry(ctx, "list records", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, sql, q.Args()...)
		if err != nil {
			return err
		}
		recs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Record, error) {
			return scanRecord(row)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// deleteRecord forgets a live record by making it expire now, in one
// statement: store.Tombstone on the database's clock (see store.Admin for
// why the row stays until reaped).
func (s *Store) deleteRecord(ctx context.Context, p store.DeleteRecordParams) (store.Decision, error) {
	var rec store.Record
	err := s.withRetry(ctx, p.Op().Label, func(ctx context.Context) error {
		var err error
		rec, err = scanRecord(s.pool.QueryRow(ctx, tombstoneSQL, p.Consumer, p.Key))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Decision{}, err
	}
	return store.Decision{Record: rec, Write: true}, nil
}

// PurgeBatch deletes one batch in one statement. The subquery picks the
// batch (neither database runs the other's DELETE ... LIMIT); the outer
// filter is checked again on each row deleted, so a row that a concurrent
// write moved out of the selection since survives.
func (s *Store) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	if err := p.Validate(true); err != nil {
		return 0, err
	}
	q := sqlfilter.NewQuery()
	sqlfilter.Purge(dialect, q, p)
	where := q.Clause()
	sql := `DELETE FROM dedup_records WHERE ` + where + ` AND (consumer, key) IN (
    SELECT consumer, key FROM dedup_records WHERE ` + where + ` LIMIT ` + strconv.Itoa(p.Limit) + `)`
	var deleted int
	err := s.withRetry(ctx, "purge", func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, sql, q.Args()...)
		deleted = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, err
	}
	return deleted, nil
}

// CountPurge counts what PurgeBatch would delete.
func (s *Store) CountPurge(ctx context.Context, p store.PurgeParams) (int64, error) {
	if err := p.Validate(false); err != nil {
		return 0, err
	}
	q := sqlfilter.NewQuery()
	sqlfilter.Purge(dialect, q, p)
	var n int64
	err := s.withRetry(ctx, "count purge", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT count(*) FROM dedup_records WHERE `+q.Clause(), q.Args()...).Scan(&n)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Stats counts records per consumer in one grouped query.
func (s *Store) Stats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	// Two texts rather than "$1 = '' OR consumer = $1", which would keep
	// a generic plan from seeking to the one consumer.
	sql, args := fmt.Sprintf(statsSQL, ""), []any(nil)
	if consumer != "" {
		sql, args = fmt.Sprintf(statsSQL, "WHERE consumer = $1"), []any{consumer}
	}
	var stats []store.ConsumerStats
	err := s.withRetry(ctx, "stats", func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		stats, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ConsumerStats, error) {
			var (
				c      store.ConsumerStats
				oldest *time.Time
			)
			err := row.Scan(&c.Consumer, &c.Pending, &c.Completed, &c.Rejected, &c.Released,
				&c.PendingLeaseExpired, &oldest, &c.Expired)
			if oldest != nil {
				c.OldestPendingAt = store.Now(*oldest)
			}
			return c, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return stats, nil
}
