package api

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
)

// A poll interval no test outlives: a waiter in these tests is woken by
// the finishing call or by the lease's end, never by a poll.
const noPoll = time.Hour

// patience is the wait of a waiter that a finishing call must wake: one
// that is not woken answers IN_PROGRESS when it runs out, and fails.
const patience = time.Minute

// waitingServer is DedupService and StreamService on a fresh embedded store
// behind claimwait.Notify, with waiting bounded by opts.
type waitingServer struct {
	keys    dedupv1.DedupServiceClient
	streams dedupv1.StreamServiceClient
	waits   *claimwait.Registry
}

func newWaitingServer(t *testing.T, opts claimwait.Options) waitingServer {
	t.Helper()
	inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waits := claimwait.New(opts)
	st := stack.Build(inner, stack.Options{Wake: waits})
	t.Cleanup(func() { st.Close() })
	srv := grpc.NewServer()
	log := slog.New(slog.DiscardHandler)
	policies := policy.NewKeys(st, testDefaults, time.Hour)
	Register(srv, NewDedupServiceWith(st, policies, log, ServiceOptions{Waits: waits}))
	sp := policy.NewStreams(st, policies, 0, time.Hour)
	RegisterStreams(srv, NewStreamService(st, sp, log).WaitWith(waits), NewStreamAdminService(st, sp, log))
	conn := grpctest.ServeInMemory(t, srv)
	return waitingServer{dedupv1.NewDedupServiceClient(conn), dedupv1.NewStreamServiceClient(conn), waits}
}

// untilAsleep blocks until n waiters sleep, waiting to be woken: each has
// claimed since it joined, and found the key held, so only a wake (or the
// end of its wait) makes it claim again. A count, not a time: the bound
// only turns a waiter that answered without sleeping into a failure
// instead of a hang.
func (w waitingServer) untilAsleep(t *testing.T, n int) {
	t.Helper()
	for give := time.Now().Add(2 * patience); w.waits.Asleep() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(give) {
			t.Fatalf("%d waiters asleep, never %d", w.waits.Asleep(), n)
		}
	}
}

type claimReply struct {
	res *dedupv1.ClaimResponse
	err error
}

// claimAsync starts a claim and returns where its reply arrives.
func claimAsync(ctx context.Context, c dedupv1.DedupServiceClient, req *dedupv1.ClaimRequest) <-chan claimReply {
	out := make(chan claimReply, 1)
	go func() {
		res, err := c.Claim(ctx, req)
		out <- claimReply{res, err}
	}()
	return out
}

func TestWaitingClaimOutcomes(t *testing.T) {
	tests := []struct {
		name string
		// lease of the holder's claim; finish is what the holder does once
		// the waiter waits (nil: nothing).
		lease  time.Duration
		wait   time.Duration
		finish func(ctx context.Context, c dedupv1.DedupServiceClient, token int64) error
		want   dedupv1.Outcome
		// wantToken is the waiter's fencing token when it acquires.
		wantToken int64
		wantBody  string
	}{
		// A wait to the nanosecond is accepted: it is never stored.
		{name: "holder completes", lease: time.Hour, wait: patience + time.Nanosecond, want: dedupv1.Outcome_OUTCOME_COMPLETED, wantBody: "done",
			finish: func(ctx context.Context, c dedupv1.DedupServiceClient, token int64) error {
				_, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: "k", FencingToken: token, Result: []byte("done")})
				return err
			}},
		{name: "holder rejects", lease: time.Hour, wait: patience, want: dedupv1.Outcome_OUTCOME_REJECTED,
			finish: func(ctx context.Context, c dedupv1.DedupServiceClient, token int64) error {
				_, err := c.Reject(ctx, &dedupv1.RejectRequest{Consumer: "c", Key: "k", FencingToken: token, Reason: "BAD"})
				return err
			}},
		{name: "holder releases", lease: time.Hour, wait: patience, want: dedupv1.Outcome_OUTCOME_ACQUIRED, wantToken: 2,
			finish: func(ctx context.Context, c dedupv1.DedupServiceClient, token int64) error {
				_, err := c.Reject(ctx, &dedupv1.RejectRequest{Consumer: "c", Key: "k", FencingToken: token, Reason: "AGAIN", Retryable: true})
				return err
			}},
		{name: "holder finishes through FinishBatch", lease: time.Hour, wait: patience, want: dedupv1.Outcome_OUTCOME_COMPLETED, wantBody: "batched",
			finish: func(ctx context.Context, c dedupv1.DedupServiceClient, token int64) error {
				res, err := c.FinishBatch(ctx, &dedupv1.FinishBatchRequest{Consumer: "c", Items: []*dedupv1.FinishBatchItem{
					{Key: "k", FencingToken: token, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("batched")}}}})
				if err == nil && res.GetResults()[0].GetError() != nil {
					err = status.ErrorProto(res.GetResults()[0].GetError())
				}
				return err
			}},
		// Woken by the lease's end, which the claim reported: no poll, no
		// finishing call.
		{name: "holder's lease runs out", lease: 300 * time.Millisecond, wait: patience, want: dedupv1.Outcome_OUTCOME_ACQUIRED, wantToken: 2},
		// A wait longer than --max-claim-wait is clamped, not refused: it
		// ends, IN_PROGRESS, within the minute the server grants.
		{name: "wait elapses", lease: time.Hour, wait: 100 * time.Hour, want: dedupv1.Outcome_OUTCOME_IN_PROGRESS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxWait := time.Hour
			if tt.finish == nil && tt.lease == time.Hour {
				maxWait = 200 * time.Millisecond
			}
			s := newWaitingServer(t, claimwait.Options{MaxWait: maxWait, Poll: noPoll})
			ctx := context.Background()
			held, err := s.keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Owner: "holder", LeaseTtl: durationpb.New(tt.lease)})
			if err != nil || held.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
				t.Fatalf("holder's claim: %v, %v", held, err)
			}
			reply := claimAsync(ctx, s.keys, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Owner: "waiter", Wait: durationpb.New(tt.wait)})
			if tt.finish != nil {
				s.untilAsleep(t, 1)
				if err := tt.finish(ctx, s.keys, held.GetFencingToken()); err != nil {
					t.Fatal(err)
				}
			}
			got := <-reply
			if got.err != nil {
				t.Fatal(got.err)
			}
			if got.res.GetOutcome() != tt.want || got.res.GetFencingToken() != tt.wantToken ||
				string(got.res.GetRecord().GetResult()) != tt.wantBody {
				t.Fatalf("waiter got %v token %d result %q; want %v token %d result %q", got.res.GetOutcome(),
					got.res.GetFencingToken(), got.res.GetRecord().GetResult(), tt.want, tt.wantToken, tt.wantBody)
			}
			if n := s.waits.Waiting(); n != 0 {
				t.Fatalf("%d waiters left after the answer", n)
			}
		})
	}
}

func TestWaitingClaimAnsweredAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		opts  claimwait.Options
		owner string
		wait  *durationpb.Duration
		// padding is the bytes of an unknown field that make the request
		// large.
		padding int
		reason  string // the refusal expected; empty: IN_PROGRESS
	}{
		{name: "negative wait refused", opts: claimwait.Options{MaxWait: time.Hour}, owner: "waiter",
			wait: durationpb.New(-time.Second), reason: rpcerrors.ReasonInvalidField},
		{name: "invalid duration refused", opts: claimwait.Options{MaxWait: time.Hour}, owner: "waiter",
			wait: &durationpb.Duration{Seconds: 1, Nanos: -1}, reason: rpcerrors.ReasonInvalidField},
		// The answers below must come without waiting: a claim found
		// asleep, waiting to be woken, fails the test.
		{name: "waiting off", opts: claimwait.Options{}, owner: "waiter", wait: durationpb.New(time.Hour)},
		{name: "the holder itself asks again", opts: claimwait.Options{MaxWait: time.Hour, Poll: noPoll}, owner: "holder",
			wait: durationpb.New(time.Hour)},
		{name: "a large request does not wait", opts: claimwait.Options{MaxWait: time.Hour, Poll: noPoll}, owner: "waiter",
			wait: durationpb.New(time.Hour), padding: maxWaitingRequestBytes},
		{name: "no wait asked", opts: claimwait.Options{MaxWait: time.Hour, Poll: noPoll}, owner: "waiter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newWaitingServer(t, tt.opts)
			ctx := context.Background()
			if _, err := s.keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Owner: "holder", LeaseTtl: durationpb.New(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			req := &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Owner: tt.owner, Wait: tt.wait}
			if tt.padding > 0 {
				req.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 999, protowire.BytesType), make([]byte, tt.padding)))
			}
			reply := claimAsync(ctx, s.keys, req)
			var res *dedupv1.ClaimResponse
			var err error
			for ; ; time.Sleep(time.Millisecond) {
				if s.waits.Asleep() > 0 {
					t.Fatal("the claim waits")
				}
				if got, ok := tryReceive(reply); ok {
					res, err = got.res, got.err
					break
				}
			}
			if tt.reason != "" {
				if info := wantReason(t, err, tt.reason); info.GetMetadata()["field"] != "wait" {
					t.Fatalf("refusal names field %q, want wait", info.GetMetadata()["field"])
				}
				return
			}
			if err != nil || res.GetOutcome() != dedupv1.Outcome_OUTCOME_IN_PROGRESS {
				t.Fatalf("got %v, %v; want IN_PROGRESS", res.GetOutcome(), err)
			}
		})
	}
}

func tryReceive[T any](c <-chan T) (T, bool) {
	select {
	case v := <-c:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

func TestWaitingClaimCancelled(t *testing.T) {
	s := newWaitingServer(t, claimwait.Options{MaxWait: time.Hour, Poll: noPoll})
	if _, err := s.keys.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "c", Key: "k", LeaseTtl: durationpb.New(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	reply := claimAsync(ctx, s.keys, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Wait: durationpb.New(time.Hour)})
	s.untilAsleep(t, 1)
	cancel()
	if got := <-reply; status.Code(got.err) != codes.Canceled {
		t.Fatalf("cancelled waiter got %v, %v", got.res, got.err)
	}
	s.untilAsleep(t, 0) // the server's side of the call ended its wait too
}

func TestWaitingClaimPastBounds(t *testing.T) {
	tests := []struct {
		name string
		opts claimwait.Options
		// keys the waiters in place wait on, then the key of the claim past
		// the bound.
		waiting []string
		past    string
	}{
		{name: "per key", opts: claimwait.Options{PerKey: 2}, waiting: []string{"a", "a"}, past: "a"},
		{name: "per consumer", opts: claimwait.Options{PerConsumer: 2}, waiting: []string{"a", "b"}, past: "c"},
		{name: "per server", opts: claimwait.Options{PerServer: 3}, waiting: []string{"a", "b", "c"}, past: "d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.MaxWait, tt.opts.Poll = time.Hour, noPoll
			s := newWaitingServer(t, tt.opts)
			ctx := context.Background()
			tokens := map[string]int64{}
			for _, k := range []string{"a", "b", "c", "d"} {
				res, err := s.keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: k, Owner: "holder", LeaseTtl: durationpb.New(time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				tokens[k] = res.GetFencingToken()
			}
			var replies []<-chan claimReply
			for _, k := range tt.waiting {
				replies = append(replies, claimAsync(ctx, s.keys, &dedupv1.ClaimRequest{Consumer: "c", Key: k, Wait: durationpb.New(time.Hour)}))
			}
			s.untilAsleep(t, len(tt.waiting))
			// Past the bound: IN_PROGRESS at once (a wait would hang the test).
			res, err := s.keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: tt.past, Wait: durationpb.New(time.Hour)})
			if err != nil || res.GetOutcome() != dedupv1.Outcome_OUTCOME_IN_PROGRESS {
				t.Fatalf("claim past the bound got %v, %v; want IN_PROGRESS", res.GetOutcome(), err)
			}
			if n := s.waits.Waiting(); n != len(tt.waiting) {
				t.Fatalf("%d waiting after the refused wait, want %d", n, len(tt.waiting))
			}
			for k, token := range tokens {
				if _, err := s.keys.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: k, FencingToken: token, Result: []byte(k)}); err != nil {
					t.Fatal(err)
				}
			}
			for i, r := range replies {
				if got := <-r; got.err != nil || string(got.res.GetRecord().GetResult()) != tt.waiting[i] {
					t.Fatalf("waiter %d got %v, %v", i, got.res, got.err)
				}
			}
		})
	}
}
