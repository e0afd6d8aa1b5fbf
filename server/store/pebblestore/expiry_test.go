package pebblestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
)

// An expiry entry that no row stands behind (its row is gone, or lives on
// with another expiry) must not stop the reaper. More such entries than a
// chunk holds sort before an expired record; one Reap still deletes the
// record, drops them, and leaves the live row's own entry.
func TestReapDropsEntriesNoRowStandsBehind(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	short := long
	short.CompletedTTL = time.Millisecond
	for key, policy := range map[string]store.Policy{"expires": short, "lives": long} {
		c, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: key, Owner: "o", Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: key, FencingToken: c.Record.FencingToken, Policy: policy}); err != nil {
			t.Fatal(err)
		}
	}
	b := s.db.NewBatch()
	past := time.Now().Add(-time.Hour)
	for i := range reapChunk + 10 {
		_ = b.Set(expiryKey(tableRecordExpiry, past.Add(time.Duration(i)*time.Microsecond), "c", fmt.Sprint("gone", i)), nil, nil)
	}
	_ = b.Set(expiryKey(tableRecordExpiry, past, "c", "lives"), nil, nil)
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // past "expires"'s 1 ms

	n, err := s.Reap(ctx, store.KeyKind, 1000)
	if err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want 1 (the expired record), nil", n, err)
	}
	if r, err := s.Lookup(ctx, "c", "lives"); err != nil || r.State != store.Completed {
		t.Errorf("the live record: %+v, %v", r, err)
	}
	checkIndexes(t, s) // one entry per row: none of the planted ones
}
