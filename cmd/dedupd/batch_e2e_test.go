package main

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestBatchPollThroughTheBinary claims a whole poll in one call, heartbeats
// it, records every outcome in one call, and after a restart finds each
// outcome replayed by the same batch, on every backend.
func TestBatchPollThroughTheBinary(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		ctx := context.Background()
		flags = append(flags, "--max-batch-items", "60")
		srv := startDedupd(t, flags...)
		c := dedupv1.NewDedupServiceClient(srv.dial(t))
		const n = 60
		poll := &dedupv1.ClaimBatchRequest{Consumer: consumer}
		for i := range n {
			poll.Items = append(poll.Items, &dedupv1.ClaimBatchItem{Key: fmt.Sprintf("msg-%02d", i), Digest: []byte("d")})
		}
		claimed, err := c.ClaimBatch(ctx, poll)
		if err != nil {
			t.Fatal(err)
		}
		heartbeat := &dedupv1.ExtendLeaseBatchRequest{Consumer: consumer}
		finish := &dedupv1.FinishBatchRequest{Consumer: consumer}
		for i, res := range claimed.GetResults() {
			if res.GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
				t.Fatalf("item %d of a fresh poll: %v, want ACQUIRED", i, res)
			}
			key, token := poll.GetItems()[i].GetKey(), res.GetClaim().GetFencingToken()
			heartbeat.Items = append(heartbeat.Items, &dedupv1.ExtendLeaseBatchItem{Key: key, FencingToken: token})
			item := &dedupv1.FinishBatchItem{Key: key, FencingToken: token,
				Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("done-" + key)}}
			if i%3 == 0 {
				item.Outcome = &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{Reason: "BAD"}}
			}
			finish.Items = append(finish.Items, item)
		}
		extended, err := c.ExtendLeaseBatch(ctx, heartbeat)
		if err != nil {
			t.Fatal(err)
		}
		for i, res := range extended.GetResults() {
			if res.GetRecord().GetState() != dedupv1.State_STATE_PENDING {
				t.Fatalf("heartbeat %d: %v", i, res)
			}
		}
		if _, err := c.FinishBatch(ctx, finish); err != nil {
			t.Fatal(err)
		}

		srv.stop(t)
		srv = startDedupd(t, flags...)
		c = dedupv1.NewDedupServiceClient(srv.dial(t))
		replayed, err := c.ClaimBatch(ctx, poll)
		if err != nil {
			t.Fatal(err)
		}
		for i, res := range replayed.GetResults() {
			want, result := dedupv1.Outcome_OUTCOME_COMPLETED, "done-"+poll.GetItems()[i].GetKey()
			if i%3 == 0 {
				want, result = dedupv1.Outcome_OUTCOME_REJECTED, ""
			}
			if res.GetClaim().GetOutcome() != want || string(res.GetClaim().GetRecord().GetResult()) != result {
				t.Fatalf("redelivered item %d: %v, want %v with result %q", i, res, want, result)
			}
		}
		looked, err := c.LookupBatch(ctx, &dedupv1.LookupBatchRequest{Consumer: consumer, Keys: []string{"msg-01", "never"}})
		if err != nil {
			t.Fatal(err)
		}
		if looked.GetResults()[0].GetRecord().GetState() != dedupv1.State_STATE_COMPLETED ||
			status.FromProto(looked.GetResults()[1].GetError()).Code() != codes.NotFound {
			t.Fatalf("LookupBatch: %v", looked)
		}
		poll.Items = append(poll.Items, &dedupv1.ClaimBatchItem{Key: "one-too-many"})
		_, err = c.ClaimBatch(ctx, poll)
		wantError(t, err, codes.InvalidArgument, "INVALID_FIELD")
		srv.stop(t)
	})
}
