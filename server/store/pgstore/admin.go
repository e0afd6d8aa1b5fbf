package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

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
)

// The admin reads take the dialect whose clock they read: the database's
// (sqlstmt.Postgres), or, in the oracle tests of the read rules, one
// stopped at a chosen time (see readrules_export_test.go).

// ListRecords lists live records in key order, one keyset page at a time.
func (s *Store) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	return s.listRecords(ctx, sqlstmt.Postgres, p)
}

func (s *Store) listRecords(ctx context.Context, d sqlstmt.Dialect, p store.ListParams) ([]store.Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := sqlstmt.ListWhere(d, p)
	sql := sqlstmt.SelectListed(recordColumns, q, p.Limit)
	return queryAll(ctx, s, "list records", sql, q.Args(), func(row sqlstmt.Row) (store.Record, error) { return scanRecord(row) })
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

// Purge deletes one batch in one statement (sqlstmt.DeletePurged), or
// counts what it would delete in all.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int64, error) {
	return s.purge(ctx, sqlstmt.Postgres, p)
}

func (s *Store) purge(ctx context.Context, d sqlstmt.Dialect, p store.PurgeParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	q := sqlstmt.PurgeWhere(d, p)
	var n int64
	err := s.withRetry(ctx, purgeOp(p), func(ctx context.Context) error {
		if p.CountOnly {
			return s.pool.QueryRow(ctx, sqlstmt.CountPurged(q), q.Args()...).Scan(&n)
		}
		tag, err := s.pool.Exec(ctx, sqlstmt.DeletePurged(q, p.Limit), q.Args()...)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// purgeOp names a purge's retries.
func purgeOp(p store.PurgeParams) string {
	if p.CountOnly {
		return "count purge"
	}
	return "purge"
}

// StatsOf counts the records or the streams of a consumer, or of all.
func (s *Store) StatsOf(ctx context.Context, kind store.Kind, consumer string) (store.KindStats, error) {
	return store.StatsByKind(ctx, kind, consumer, s.keyStats, s.streamStats)
}

// keyStats counts records per consumer in one grouped query.
func (s *Store) keyStats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	return s.stats(ctx, sqlstmt.Postgres, consumer)
}

func (s *Store) stats(ctx context.Context, d sqlstmt.Dialect, consumer string) ([]store.ConsumerStats, error) {
	sql, args := sqlstmt.Stats(d, false), d.Args()
	if consumer != "" {
		sql, args = sqlstmt.Stats(d, true), d.Args(consumer)
	}
	return queryAll(ctx, s, "stats", sql, args, func(row sqlstmt.Row) (store.ConsumerStats, error) {
		return sqlstmt.ScanStats(row, nullTime)
	})
}
