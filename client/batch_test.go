package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
)

// The batch calls answer per item, with typed errors.
func TestBatchCalls(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		digest := client.Digest([]byte("m"))
		claimed, err := c.ClaimBatch(ctx, "shop", []client.ClaimItem{
			{Key: "a", Digest: digest}, {Key: "b", Digest: digest}, {Key: "a", Digest: digest}, {Key: ""}})
		if err != nil {
			t.Fatal(err)
		}
		if claimed[0].Outcome != client.Acquired || claimed[1].Outcome != client.Acquired || claimed[2].Outcome != client.InProgress {
			t.Fatalf("claims: %+v", claimed)
		}
		var invalid *client.Error
		if !errors.As(claimed[3].Err, &invalid) || !errors.Is(claimed[3].Err, client.ErrInvalidArgument) || invalid.Field != "items[3].key" {
			t.Fatalf("empty key: %v, want ErrInvalidArgument on items[3].key", claimed[3].Err)
		}
		extended, err := c.ExtendLeaseBatch(ctx, "shop", []client.ExtendItem{
			{Key: "a", FencingToken: claimed[0].FencingToken, LeaseTTL: time.Minute}, {Key: "b", FencingToken: 99}})
		if err != nil || extended[0].Err != nil || !errors.Is(extended[1].Err, client.ErrLeaseLost) {
			t.Fatalf("ExtendLeaseBatch: %+v, %v; want a, then ErrLeaseLost", extended, err)
		}
		finished, err := c.FinishBatch(ctx, "shop", []client.FinishItem{
			{Key: "a", FencingToken: claimed[0].FencingToken, Result: []byte("ok")},
			{Key: "b", FencingToken: claimed[1].FencingToken, Rejection: &client.Rejection{Reason: "NO"}},
			{Key: "a", FencingToken: claimed[0].FencingToken, Result: []byte("other")}})
		if err != nil || finished[0].Err != nil || finished[1].Record.GetState().String() != "STATE_REJECTED" ||
			!errors.Is(finished[2].Err, client.ErrAlreadyFinished) {
			t.Fatalf("FinishBatch: %+v, %v", finished, err)
		}
		looked, err := c.LookupBatch(ctx, "shop", []string{"a", "none"})
		if err != nil || string(looked[0].Record.GetResult()) != "ok" || !errors.Is(looked[1].Err, client.ErrNotFound) {
			t.Fatalf("LookupBatch: %+v, %v", looked, err)
		}
		_, err = c.ClaimBatch(ctx, "Bad Consumer", nil)
		if !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("batch for an invalid consumer: %v, want the whole call refused", err)
		}
	})
}

// DoBatch runs fn once per acquired key, replays stored outcomes without
// running it, records every outcome in one FinishBatch, and types each
// item's error as Do would.
func TestDoBatch(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		var calls callCounter
		c, ctx := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(calls.interceptor()))), testContext(t)
		digest := client.Digest([]byte("m"))
		var runs sync.Map
		fn := func(ctx context.Context, key string, a client.Attempt) ([]byte, error) {
			n, _ := runs.LoadOrStore(key, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			switch key {
			case "refuse":
				return nil, client.Terminal("NO", errOutOfStock, nil)
			case "flaky":
				return nil, errors.New("try again")
			}
			return fmt.Appendf(nil, "done %s/%d", key, a.FencingToken), nil
		}
		poll := []client.BatchItem{{"m1", digest}, {"m2", digest}, {"refuse", digest}, {"flaky", digest}, {"m1", digest}}
		first, err := c.DoBatch(ctx, "shop", poll, client.DoBatchOptions{Parallelism: 2}, fn)
		if err != nil {
			t.Fatal(err)
		}
		if string(first[0].Result) != "done m1/1" || first[0].Replayed || string(first[1].Result) != "done m2/1" ||
			string(first[4].Result) != "done m1/1" {
			t.Fatalf("first delivery: %+v", first)
		}
		var rejected *client.RejectedError
		if !errors.As(first[2].Err, &rejected) || rejected.Replayed || !errors.Is(first[2].Err, errOutOfStock) {
			t.Fatalf("terminal failure: %v", first[2].Err)
		}
		if first[3].Err == nil || first[3].Err.Error() != "try again" {
			t.Fatalf("retryable failure: %v, want fn's error", first[3].Err)
		}
		if n, _ := runs.Load("m1"); n.(*atomic.Int64).Load() != 1 {
			t.Fatalf("m1, named twice, ran %d times", n.(*atomic.Int64).Load())
		}
		if calls.claimBatches.Load() != 1 || calls.finishBatches.Load() != 1 {
			t.Fatalf("%d ClaimBatch and %d FinishBatch calls, want one of each", calls.claimBatches.Load(), calls.finishBatches.Load())
		}

		again, err := c.DoBatch(ctx, "shop", poll, client.DoBatchOptions{}, fn)
		if err != nil {
			t.Fatal(err)
		}
		if !again[0].Replayed || string(again[0].Result) != "done m1/1" || !errors.As(again[2].Err, &rejected) || !rejected.Replayed {
			t.Fatalf("redelivery: %+v", again)
		}
		if again[3].Err == nil || again[3].Err.Error() != "try again" {
			t.Fatalf("released key on redelivery: %v, want fn run again", again[3].Err)
		}
		if n, _ := runs.Load("flaky"); n.(*atomic.Int64).Load() != 2 {
			t.Fatalf("released key ran %d times, want 2", n.(*atomic.Int64).Load())
		}
		other, err := c.DoBatch(ctx, "shop", []client.BatchItem{{"m1", client.Digest([]byte("other"))}}, client.DoBatchOptions{}, fn)
		if err != nil || !errors.Is(other[0].Err, client.ErrDigestMismatch) {
			t.Fatalf("other content: %+v, %v; want ErrDigestMismatch", other, err)
		}
	})
}

// DoBatch keeps a poll's leases alive while fn runs longer than a lease,
// with one ExtendLeaseBatch per heartbeat, and gives a key that another
// caller holds an InProgressError at once.
func TestDoBatchHeartbeats(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		var calls callCounter
		c, ctx := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(calls.interceptor()))), testContext(t)
		held, err := c.Claim(ctx, "shop", "held", nil, client.ClaimOptions{LeaseTTL: time.Minute})
		if err != nil || held.Outcome != client.Acquired {
			t.Fatal(held, err)
		}
		poll := []client.BatchItem{{Key: "slow-1"}, {Key: "slow-2"}, {Key: "held"}}
		out, err := c.DoBatch(ctx, "shop", poll, client.DoBatchOptions{LeaseTTL: 300 * time.Millisecond},
			func(ctx context.Context, key string, a client.Attempt) ([]byte, error) {
				waitFor(t, "two heartbeats", func() bool { return calls.extendBatches.Load() >= 2 })
				return []byte("ok"), ctx.Err()
			})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if out[i].Err != nil || string(out[i].Result) != "ok" {
				t.Fatalf("slow item %d: %+v", i, out[i])
			}
		}
		if !errors.Is(out[2].Err, client.ErrInProgressTimeout) {
			t.Fatalf("held key: %v, want an InProgressError", out[2].Err)
		}
	})
}
