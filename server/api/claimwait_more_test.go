package api

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
)

// A batch answers once each waiting item has its answer: a free key at
// once, a held one with the holder's outcome, a key named twice behind its
// own acquisition without waiting (its holder is the batch's caller), and a
// negative wait as that item's own error.
func TestWaitingClaimBatch(t *testing.T) {
	s := newWaitingServer(t, claimwait.Options{MaxWait: time.Hour, Poll: noPoll})
	ctx := context.Background()
	held, err := s.keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "held", Owner: "holder", LeaseTtl: durationpb.New(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	wait := durationpb.New(patience)
	out := make(chan *dedupv1.ClaimBatchResponse, 1)
	go func() {
		res, err := s.keys.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "c", Items: []*dedupv1.ClaimBatchItem{
			{Key: "held", Wait: wait}, {Key: "free", Wait: wait}, {Key: "free", Wait: wait}, {Key: "bad", Wait: durationpb.New(-time.Second)},
		}})
		if err != nil {
			t.Error(err)
		}
		out <- res
	}()
	s.untilAsleep(t, 1)
	if n := s.waits.Waiting(); n != 1 {
		t.Fatalf("%d keys waited on, want 1 (only the held key)", n)
	}
	if _, err := s.keys.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: "held", FencingToken: held.GetFencingToken(), Result: []byte("r")}); err != nil {
		t.Fatal(err)
	}
	res := <-out
	r := res.GetResults()
	if len(r) != 4 {
		t.Fatalf("%d results", len(r))
	}
	if c := r[0].GetClaim(); c.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED || string(c.GetRecord().GetResult()) != "r" {
		t.Errorf("held item: %v", r[0])
	}
	if r[1].GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED || r[2].GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_IN_PROGRESS {
		t.Errorf("free key named twice: %v, %v", r[1], r[2])
	}
	if e := r[3].GetError(); e == nil || fieldOf(status.FromProto(e)) != "items[3].wait" {
		t.Errorf("negative wait item: %v", r[3])
	}
}

// fieldOf is the field an INVALID_FIELD status names.
func fieldOf(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == rpcerrors.ReasonInvalidField {
			return info.GetMetadata()["field"]
		}
	}
	return ""
}

// Many waiters on one key against a holder that finishes: every waiter
// gets the stored outcome, or, after a release, exactly one acquires and
// the others then get that one's outcome. The invariant is the oracle.
func TestWaitingClaimRace(t *testing.T) {
	const waiters = 24
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			s := newWaitingServer(t, claimwait.Options{MaxWait: time.Hour, Poll: noPoll})
			ctx := context.Background()
			held, err := s.keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Owner: "holder", LeaseTtl: durationpb.New(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			results := make([]*dedupv1.ClaimResponse, waiters)
			for i := range waiters {
				wg.Go(func() {
					res, err := s.keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Owner: fmt.Sprint("w", i), Wait: durationpb.New(patience)})
					if err != nil {
						t.Error(err)
					}
					results[i] = res
					if res.GetOutcome() == dedupv1.Outcome_OUTCOME_ACQUIRED { // the new holder finishes at once
						_, err := s.keys.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: "k", FencingToken: res.GetFencingToken(), Result: []byte("second")})
						if err != nil {
							t.Error(err)
						}
					}
				})
			}
			s.untilAsleep(t, waiters)
			if release {
				_, err = s.keys.Reject(ctx, &dedupv1.RejectRequest{Consumer: "c", Key: "k", FencingToken: held.GetFencingToken(), Reason: "AGAIN", Retryable: true})
			} else {
				_, err = s.keys.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: "k", FencingToken: held.GetFencingToken(), Result: []byte("first")})
			}
			if err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			acquired, completed := 0, map[string]int{}
			for _, r := range results {
				switch r.GetOutcome() {
				case dedupv1.Outcome_OUTCOME_ACQUIRED:
					acquired++
				case dedupv1.Outcome_OUTCOME_COMPLETED:
					completed[string(r.GetRecord().GetResult())]++
				default:
					t.Errorf("waiter got %v", r.GetOutcome())
				}
			}
			want, wantAcquired := map[string]int{"first": waiters}, 0
			if release {
				want, wantAcquired = map[string]int{"second": waiters - 1}, 1
			}
			if acquired != wantAcquired || fmt.Sprint(completed) != fmt.Sprint(want) {
				t.Fatalf("%d acquired and completed %v; want %d and %v", acquired, completed, wantAcquired, want)
			}
		})
	}
}

// Two replicas on one database: a finish served by one wakes only its own
// waiters, and a waiter on the other sees it at its next poll of the
// store. With no poll within its wait it answers IN_PROGRESS, which shows
// that nothing crossed between the replicas.
func TestWaitingClaimOnAnotherReplica(t *testing.T) {
	for _, tt := range []struct {
		name string
		poll time.Duration
		wait time.Duration
		want dedupv1.Outcome
	}{
		{"polls the store", 20 * time.Millisecond, patience, dedupv1.Outcome_OUTCOME_COMPLETED},
		{"no poll within the wait", noPoll, 500 * time.Millisecond, dedupv1.Outcome_OUTCOME_IN_PROGRESS},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { inner.Close() })
			replica := func(poll time.Duration) (dedupv1.DedupServiceClient, *claimwait.Registry) {
				waits := claimwait.New(claimwait.Options{MaxWait: time.Hour, Poll: poll})
				st := stack.Build(inner, stack.Options{Wake: waits})
				srv := grpc.NewServer()
				Register(srv, NewDedupServiceWith(st, policy.NewKeys(st, testDefaults, time.Hour), slog.New(slog.DiscardHandler), ServiceOptions{Waits: waits}))
				return dedupv1.NewDedupServiceClient(grpctest.ServeInMemory(t, srv)), waits
			}
			a, _ := replica(noPoll)
			b, bWaits := replica(tt.poll)
			ctx := context.Background()
			held, err := a.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", LeaseTtl: durationpb.New(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			reply := claimAsync(ctx, b, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Wait: durationpb.New(tt.wait)})
			waitingServer{waits: bWaits}.untilAsleep(t, 1)
			if _, err := a.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: "k", FencingToken: held.GetFencingToken(), Result: []byte("r")}); err != nil {
				t.Fatal(err)
			}
			if got := <-reply; got.err != nil || got.res.GetOutcome() != tt.want {
				t.Fatalf("waiter on the other replica got %v, %v; want %v", got.res.GetOutcome(), got.err, tt.want)
			}
		})
	}
}
