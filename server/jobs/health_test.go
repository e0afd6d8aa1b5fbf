package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// flakyPing is a store whose pings fail while failing is set, as a ping
// starved of CPU does when its window passes (without waiting it out).
type flakyPing struct {
	store.Store
	failing atomic.Bool
}

func (f *flakyPing) Ping(ctx context.Context) error {
	if f.failing.Load() {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, context.DeadlineExceeded)
	}
	return f.Store.Ping(ctx)
}

// TestMissedPingsNeedARunToGoDown: one or two pings that miss their window
// leave health SERVING; the third in a row turns it NOT_SERVING, and the
// next ping that answers brings it back.
func TestMissedPingsNeedARunToGoDown(t *testing.T) {
	sq, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	st := &flakyPing{Store: sq}
	hs := health.NewServer()
	probePolicy := store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	names := []string{"", "dedup.v1.DedupService"}
	// A minute is the window of a ping that answers.
	w := NewHealthWatcher(hs, names, time.Minute, probePolicy, metrics.New(), slog.New(slog.DiscardHandler))
	serving := func() bool {
		resp, err := hs.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "dedup.v1.DedupService"})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}
	w.Check(context.Background(), st)
	if !serving() {
		t.Fatal("not SERVING after a ping that answered")
	}
	// Two missed pings, then an answer; then three missed pings, then an
	// answer: NOT_SERVING only after the third miss in a row.
	for round, misses := range []int{2, 3} {
		st.failing.Store(true)
		for i := range misses {
			w.Check(context.Background(), st)
			if want := i < 2; serving() != want {
				t.Fatalf("round %d, after %d missed pings in a row: SERVING = %v, want %v", round, i+1, !want, want)
			}
		}
		st.failing.Store(false)
		w.Check(context.Background(), st)
		if !serving() {
			t.Fatalf("round %d: not SERVING after a ping answered again", round)
		}
	}
}
