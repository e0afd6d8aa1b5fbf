package pebblestore

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
)

// A dedupd before indexes.go's rule Set a Pending record's lease entry
// over itself when the lease moved. Open rewrites such entries once, so
// that the Complete's SingleDelete removes the entry for good: after a
// compaction that meets both old Sets, the index is empty and Pebble
// reports no misuse. Without the rewrite the older Set comes back.
func TestOpenSettlesLeaseEntriesSetOverThemselves(t *testing.T) {
	ctx, dir := context.Background(), t.TempDir()
	policy := store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "k", Owner: "o", Policy: policy})
	if err != nil || claim.Outcome != store.Acquired {
		t.Fatalf("claim: %+v, %v", claim, err)
	}
	// What the older dedupd left: the entry, the same entry Set again (an
	// ExtendLease), both in the table (a snapshot, such as a scan's, kept
	// the first through the flush), and no mark.
	pk := rowKey(tablePending, "c", "k")
	snap := s.db.NewSnapshot()
	for _, step := range []func() error{
		func() error { return s.db.Set(pk, appendTime(nil, time.Now().Add(2*time.Hour)), pebble.Sync) },
		func() error { return s.db.Delete(settledKey, pebble.Sync) },
		s.db.Flush,
		snap.Close,
		s.Close,
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}

	s, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: "k", FencingToken: claim.Record.FencingToken, Policy: policy})
	if err != nil || done.State != store.Completed {
		t.Fatalf("complete: %+v, %v", done, err)
	}
	checkIndexesCompacted(t, s)
}
