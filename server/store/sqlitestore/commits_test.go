package sqlitestore_test

import (
	"testing"

	"github.com/dedupd/dedupd/internal/testing/committest"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// Every transaction that wrote is one commit carrying its group's writes,
// refusals not counted; under SyncFull each is one fsync, under
// SyncNormal none is; without group commit each write is its own commit.
func TestCommitMetrics(t *testing.T) {
	const callers = 48
	for _, tc := range []struct {
		name   string
		opts   sqlitestore.Options
		fsyncs func(commits float64) float64
	}{
		{"grouped, full", sqlitestore.Options{}, func(c float64) float64 { return c }},
		{"grouped, normal", sqlitestore.Options{Sync: sqlitestore.SyncNormal}, func(float64) float64 { return 0 }},
		{"one by one", sqlitestore.Options{MaxBatch: 1}, func(c float64) float64 { return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := commitmetrics.New()
			tc.opts.Commits = set.For(commitmetrics.StoreSQLite, tc.opts.Sync == sqlitestore.SyncFull)
			s := openStoreWith(t, t.TempDir(), tc.opts)
			t.Cleanup(func() { s.Close() })
			committest.Cycles(t, s, callers, policy)
			got := committest.Read(t, set, commitmetrics.StoreSQLite)
			committest.CheckCycles(t, got, callers)
			if got.Fsyncs != tc.fsyncs(got.Commits) {
				t.Errorf("%v fsyncs for %v commits; want %v", got.Fsyncs, got.Commits, tc.fsyncs(got.Commits))
			}
			if tc.opts.MaxBatch == 1 && got.Commits != 2*callers {
				t.Errorf("%v commits without group commit; want one per write, %d", got.Commits, 2*callers)
			}
		})
	}
}
