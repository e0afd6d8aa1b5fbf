package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// Leases sums up the claims in flight of one kind per consumer: the
// pending claims of keys or the streams' claims in flight.
func (s *Store) Leases(ctx context.Context, kind store.Kind) ([]store.LeaseStats, error) {
	q, err := store.PickKind(kind, opSQL{"pending leases", sqlstmt.PendingLeases(sqlstmt.SQLite)}, opSQL{"in-flight leases", sqlstmt.InFlightLeases(sqlstmt.SQLite)})
	if err != nil {
		return nil, err
	}
	return queryAll(ctx, s, q.op, q.sql, sqlstmt.SQLite.Args(), func(row sqlstmt.Row) (store.LeaseStats, error) {
		return sqlstmt.ScanLeaseStats(row, nullTime)
	})
}

// opSQL is the statement of one kind of a kind-parametrised call, and the
// name of the operation its failures carry.
type opSQL struct{ op, sql string }
