package api

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

func TestPurgeStreamsRunningCounts(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	for i := range 5 {
		c.finish(t, "inv", fmt.Sprintf("k%d", i))
	}
	if _, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "pending"}); err != nil {
		t.Fatal(err)
	}
	c.finish(t, "other", "k0")
	completed := []dedupv1.State{dedupv1.State_STATE_COMPLETED}

	dry, err := c.admin.Purge(ctx, &dedupv1.PurgeRequest{Consumer: "inv", States: completed, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if counts, err := recvAll(t, dry); err != nil || !slices.Equal(counts, []int64{5}) {
		t.Fatalf("dry run = %v, %v; want one message counting 5", counts, err)
	}
	stream, err := c.admin.Purge(ctx, &dedupv1.PurgeRequest{Consumer: "inv", States: completed, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if counts, err := recvAll(t, stream); err != nil || !slices.Equal(counts, []int64{2, 4, 5, 5}) {
		t.Fatalf("purge counts = %v, %v; want 2, 4, 5 after each batch, then 5 done", counts, err)
	}
	stats, err := c.admin.Stats(ctx, &dedupv1.StatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stats.GetConsumers(); len(got) != 2 || got[0].GetCompleted() != 0 || got[0].GetPending() != 1 || got[1].GetCompleted() != 1 {
		t.Fatalf("stats after purge = %v, want inv's pending and other's record left", got)
	}
}

func TestPurgeUpdatedBeforeKeepsNewerRecords(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	old := c.finish(t, "inv", "old")
	cut := old.GetUpdatedAt().AsTime().Add(time.Microsecond)
	waitPast(cut)
	newer := c.finish(t, "inv", "newer")
	if !newer.GetUpdatedAt().AsTime().After(cut) {
		t.Fatalf("the newer record (%v) is not later than the cut %v", newer.GetUpdatedAt().AsTime(), cut)
	}
	stream, err := c.admin.Purge(ctx, &dedupv1.PurgeRequest{Consumer: "inv", UpdatedBefore: timestamppb.New(cut)})
	if err != nil {
		t.Fatal(err)
	}
	if counts, err := recvAll(t, stream); err != nil || counts[len(counts)-1] != 1 {
		t.Fatalf("purge = %v, %v; want 1 deleted", counts, err)
	}
	if _, err := c.dedup.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "inv", Key: "newer"}); err != nil {
		t.Fatalf("the newer record was purged: %v", err)
	}
}

func TestPurgeRefusesBadRequests(t *testing.T) {
	c := newClients(t, 0)
	cases := []struct {
		name  string
		req   *dedupv1.PurgeRequest
		field string
	}{
		{"no consumer", &dedupv1.PurgeRequest{}, "consumer"},
		{"bad consumer", &dedupv1.PurgeRequest{Consumer: "A", ExpiredOnly: true}, "consumer"},
		{"unspecified state", &dedupv1.PurgeRequest{Consumer: "inv", States: []dedupv1.State{dedupv1.State_STATE_UNSPECIFIED}}, "states"},
		{"unknown state", &dedupv1.PurgeRequest{Consumer: "inv", States: []dedupv1.State{99}}, "states"},
		{"negative batch", &dedupv1.PurgeRequest{Consumer: "inv", BatchSize: -1}, "batch_size"},
		{"batch over the maximum", &dedupv1.PurgeRequest{Consumer: "inv", BatchSize: MaxPurgeBatch + 1}, "batch_size"},
		{"malformed time", &dedupv1.PurgeRequest{Consumer: "inv", UpdatedBefore: &timestamppb.Timestamp{Nanos: -1}}, "updated_before"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := c.admin.Purge(context.Background(), tc.req)
			if err == nil {
				_, err = stream.Recv()
			}
			wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, tc.field)
		})
	}
	// Expired records of every consumer need no consumer.
	stream, err := c.admin.Purge(context.Background(), &dedupv1.PurgeRequest{ExpiredOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if counts, err := recvAll(t, stream); err != nil || !slices.Equal(counts, []int64{0}) {
		t.Fatalf("purge of expired = %v, %v; want nothing to delete", counts, err)
	}
}

// gatedPurgeStore lets the first purge batch through, then holds the second
// until release is closed.
type gatedPurgeStore struct {
	store.Backend
	batches atomic.Int64
	second  chan struct{}
	release chan struct{}
}

func (s *gatedPurgeStore) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	if s.batches.Add(1) == 2 {
		close(s.second)
		<-s.release
	}
	return s.Backend.PurgeBatch(ctx, p)
}

// TestPurgeCancelledStopsBetweenBatches: the caller cancels while the second
// batch runs. That batch runs to its end and stays deleted, no third
// starts, and every other record is untouched.
func TestPurgeCancelledStopsBetweenBatches(t *testing.T) {
	inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inner.Close() })
	gated := &gatedPurgeStore{Backend: inner, second: make(chan struct{}), release: make(chan struct{})}
	conn := serve(t, gated, 0)
	c := clients{dedupv1.NewDedupServiceClient(conn), dedupv1.NewAdminServiceClient(conn)}
	for i := range 10 {
		c.finish(t, "inv", fmt.Sprintf("k%02d", i))
	}

	ctx, cancel := context.WithCancel(context.Background())
	stream, err := c.admin.Purge(ctx, &dedupv1.PurgeRequest{Consumer: "inv", BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil || first.GetDeleted() != 3 {
		t.Fatalf("first message = %v, %v; want 3 deleted", first, err)
	}
	<-gated.second
	cancel()
	if _, err := stream.Recv(); err == nil {
		t.Fatal("cancelled stream went on")
	}
	close(gated.release)

	// The handler ends once its second batch commits; wait for that through
	// the store, then check no third batch ran.
	var left []store.Record
	for {
		left, err = inner.ListRecords(context.Background(), store.ListParams{Consumer: "inv", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(left) <= 4 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if len(left) != 4 || gated.batches.Load() != 2 {
		t.Fatalf("%d records left after %d batches, want 4 left after exactly 2", len(left), gated.batches.Load())
	}
	for _, r := range left {
		if r.State != store.Completed || string(r.Result) != "ok" {
			t.Fatalf("record left behind changed: %+v", r)
		}
	}
}

// waitPast waits until this process's clock, which the embedded store
// stamps records with to the microsecond, has passed t by a microsecond,
// so that the next record written is stamped later than t. A coarse clock
// would otherwise give two records the same time, and the test could not
// tell them apart by it.
func waitPast(t time.Time) {
	for !time.Now().After(t.Add(time.Microsecond)) {
		time.Sleep(time.Microsecond)
	}
}
