package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// TestReapOnceDrainsTheBacklogInBatches: one pass deletes every expired
// record, however many batches that takes, and nothing live.
func TestReapOnceDrainsTheBacklogInBatches(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	short := store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Millisecond, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	for i := range 25 {
		key := fmt.Sprintf("expired-%d", i)
		res, err := st.Claim(ctx, store.ClaimParams{Consumer: "c", Key: key, Policy: short})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Complete(ctx, store.CompleteParams{Consumer: "c", Key: key,
			FencingToken: res.Record.FencingToken, Policy: short}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "live", Policy: short}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)

	deleted, err := reapOnce(ctx, st.DeleteExpired, 10)
	if err != nil || deleted != 25 {
		t.Fatalf("reapOnce = %d, %v; want all 25 expired records", deleted, err)
	}
	if _, err := st.Lookup(ctx, "c", "live"); err != nil {
		t.Fatalf("live record after reaping: %v", err)
	}
	if deleted, err := reapOnce(ctx, st.DeleteExpired, 10); err != nil || deleted != 0 {
		t.Fatalf("second pass = %d, %v; want nothing left to delete", deleted, err)
	}
}
