package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/server/store/internal/sqlreadtest"
)

// StoppedReads are the admin reads that take the dialect, and so the clock,
// they read: the seam through which internal/sqlreadtest holds their SQL to
// the read rules.
var StoppedReads = sqlreadtest.Reads[*Store]{List: (*Store).listRecords, Purge: (*Store).purge, Stats: (*Store).stats, Ready: (*Store).readyStreams}

// Exec runs a statement in a transaction of its own on the writer, for
// tests that write rows no command would.
func Exec(s *Store, ctx context.Context, sql string, args ...any) error {
	return s.w.write(ctx, func() error {
		_, err := s.w.conn.ExecContext(ctx, sql, args...)
		return err
	})
}
