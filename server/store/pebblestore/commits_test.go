package pebblestore_test

import (
	"context"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/committest"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/pebblestore"
)

// Every write is one commit of its kind, refusals not counted, and the
// write-ahead log's syncs are counted: at least one for the writes, and no
// more than one per commit beyond those the store makes of its own (the
// format at open, the flushes' log rotations: a few).
func TestCommitMetrics(t *testing.T) {
	const callers = 48
	set := commitmetrics.New()
	s, err := pebblestore.Open(context.Background(), t.TempDir(), pebblestore.Options{Commits: set.For(commitmetrics.StorePebble, true)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	before := committest.Read(t, set, commitmetrics.StorePebble).Fsyncs
	committest.Cycles(t, s, callers, policy)
	got := committest.Read(t, set, commitmetrics.StorePebble)
	committest.CheckCycles(t, got, callers)
	if got.Commits != 2*callers {
		t.Errorf("%v commits; want one per write, %d", got.Commits, 2*callers)
	}
	if synced := got.Fsyncs - before; synced < 1 || synced > got.Commits+4 {
		t.Errorf("%v WAL syncs for %v commits; want 1 to %v", synced, got.Commits, got.Commits+4)
	}
}
