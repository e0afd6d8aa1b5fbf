package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// The admin reads take the dialect whose clock they read: the process's
// (sqlstmt.SQLite), or, in the oracle tests of the read rules, one stopped
// at a chosen time (see readrules_export_test.go).

// ListRecords lists live records in key order, one keyset page at a time,
// on the read pool.
func (s *Store) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	return s.listRecords(ctx, sqlstmt.SQLite, p)
}

func (s *Store) listRecords(ctx context.Context, d sqlstmt.Dialect, p store.ListParams) ([]store.Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := sqlstmt.ListWhere(d, p)
	return queryAll(ctx, s, "list records", sqlstmt.SelectListed("key, "+recordFields, q, p.Limit), q.Args(),
		func(row sqlstmt.Row) (store.Record, error) {
			r := store.Record{Consumer: p.Consumer}
			return r, scanFields(row, &r, &r.Key)
		})
}

// Purge deletes one batch in one transaction on the writer (like the
// reaper's batches, the DELETE watches ctx and the COMMIT does not), or
// counts what it would delete in all, on the read pool.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int64, error) {
	return s.purge(ctx, sqlstmt.SQLite, p)
}

func (s *Store) purge(ctx context.Context, d sqlstmt.Dialect, p store.PurgeParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if p.CountOnly {
		return s.countPurge(ctx, d, p)
	}
	var deleted int64
	err := s.w.write(ctx, func() error {
		q := sqlstmt.PurgeWhere(d, p)
		res, err := s.w.conn.ExecContext(ctx, sqlstmt.DeletePurged(q, p.Limit), q.Args()...)
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
	return deleted, nil
}

// countPurge counts the records p selects.
func (s *Store) countPurge(ctx context.Context, d sqlstmt.Dialect, p store.PurgeParams) (int64, error) {
	if s.closed.Load() {
		return 0, errClosed
	}
	q := sqlstmt.PurgeWhere(d, p)
	var n int64
	err := s.r.db.QueryRowContext(ctx, sqlstmt.CountPurged(q), q.Args()...).Scan(&n)
	if err != nil {
		return 0, dbError("counting records to purge", err)
	}
	return n, nil
}

// StatsOf counts the records or the streams of a consumer, or of all.
func (s *Store) StatsOf(ctx context.Context, kind store.Kind, consumer string) (store.KindStats, error) {
	return store.StatsByKind(ctx, kind, consumer, s.keyStats, s.streamStats)
}

// keyStats counts records per consumer in one grouped query on the read pool.
func (s *Store) keyStats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	return s.stats(ctx, sqlstmt.SQLite, consumer)
}

func (s *Store) stats(ctx context.Context, d sqlstmt.Dialect, consumer string) ([]store.ConsumerStats, error) {
	text, args := sqlstmt.Stats(d, false), d.Args()
	if consumer != "" {
		text, args = sqlstmt.Stats(d, true), d.Args(consumer)
	}
	return queryAll(ctx, s, "stats", text, args, func(row sqlstmt.Row) (store.ConsumerStats, error) {
		return sqlstmt.ScanStats(row, nullTime)
	})
}
