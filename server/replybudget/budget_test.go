package replybudget_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	"github.com/dedupd/dedupd/server/replybudget"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// payloads answers UnaryCall with a payload of the size asked for, and
// counts the calls its handler ran.
type payloads struct {
	testgrpc.UnimplementedTestServiceServer
	ran *atomic.Int64
}

func (p payloads) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	p.ran.Add(1)
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: make([]byte, req.GetResponseSize())}}, nil
}

// reads plans every call as one that changes nothing.
func reads(string) replybudget.Plan { return replybudget.Plan{ReadOnly: true} }

// writes plans every call as one that may have written once its handler ran.
func writes(string) replybudget.Plan { return replybudget.Plan{} }

func serve(t *testing.T, b *replybudget.Budget) string {
	t.Helper()
	addr, _ := servePlanned(t, b, reads)
	return addr
}

// servePlanned serves with plan and returns the count of handler runs.
func servePlanned(t *testing.T, b *replybudget.Budget, plan replybudget.Planner) (string, *atomic.Int64) {
	t.Helper()
	ran := new(atomic.Int64)
	srv := grpc.NewServer(grpc.UnaryInterceptor(b.UnaryServerInterceptor(plan)), grpc.Creds(replybudget.Credentials(nil)))
	testgrpc.RegisterTestServiceServer(srv, payloads{ran: ran})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), ran
}

func client(t *testing.T, addr string) testgrpc.TestServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return testgrpc.NewTestServiceClient(conn)
}

// eventually polls cond; what it waits for is the transport writing or
// dropping bytes, which takes no time the test can name.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

const replyBytes = 1 << 20

// replySize is what a reply of replyBytes takes from the budget: its wire
// form, computed here from the message, not by the budget.
var replySize = int64(proto.Size(&testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: make([]byte, replyBytes)}}))

// TestUnreadRepliesHoldTheBudgetUntilTheyAreGone: a reply a caller reads
// gives its bytes back once written; replies a caller never reads hold
// them, at most the connection's share, until the caller leaves; and other
// callers keep getting answers meanwhile.
func TestUnreadRepliesHoldTheBudgetUntilTheyAreGone(t *testing.T) {
	limit := int64(replybudget.ConnectionShare * replyBytes) // each connection may hold one reply of replyBytes
	b := replybudget.New(limit)
	addr := serve(t, b)
	reader := client(t, addr)
	ask := &testgrpc.SimpleRequest{ResponseSize: replyBytes}
	for range 20 { // 20 MiB in all, more than the connection's share
		if _, err := reader.UnaryCall(context.Background(), ask); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the read replies to give their bytes back", func() bool { return b.InUse() == 0 })

	request, err := proto.Marshal(ask)
	if err != nil {
		t.Fatal(err)
	}
	stalled := grpctest.DialStalling(t, addr)
	// The first reply takes the connection's share; four more are then
	// refused (after MaxWait) without taking anything. They are sent only
	// once the first holds its reply: sent together, all five could take
	// their Floor before any grew to its whole reply, and then none fits
	// in the share beside the others' floors, so all five wait out MaxWait
	// and are refused (a run of the budget's rules, not what this tests).
	stalled.Send("/grpc.testing.TestService/UnaryCall", request, 1)
	eventually(t, "the stalled connection to hold one reply", func() bool { return b.InUse() == replySize })
	stalled.Send("/grpc.testing.TestService/UnaryCall", request, 4)
	time.Sleep(2 * replybudget.MaxWait) // let the refusals land; nothing may be added meanwhile
	if got := b.InUse(); got != replySize {
		t.Fatalf("a connection that never reads holds %d bytes of replies, want its one reply of %d", got, replySize)
	}
	for range 20 {
		if _, err := reader.UnaryCall(context.Background(), ask); err != nil {
			t.Fatalf("a caller that reads was refused beside one that does not: %v", err)
		}
	}

	stalled.Close()
	eventually(t, "the bytes of the closed connection's replies to come back", func() bool { return b.InUse() == 0 })
}

// TestFullBudgetRefusesWithReason: a reply that finds no room fails
// RESOURCE_EXHAUSTED with reason OVERLOADED, and takes nothing.
func TestFullBudgetRefusesWithReason(t *testing.T) {
	b := replybudget.New(2*replySize + 1<<10) // two replies; not a third's Floor
	addr := serve(t, b)
	request, err := proto.Marshal(&testgrpc.SimpleRequest{ResponseSize: replyBytes})
	if err != nil {
		t.Fatal(err)
	}
	stalled := grpctest.DialStalling(t, addr) // its share is one reply
	stalled.Send("/grpc.testing.TestService/UnaryCall", request, 1)
	eventually(t, "the stalled reply to hold the budget", func() bool { return b.InUse() == replySize })
	other := grpctest.DialStalling(t, addr)
	other.Send("/grpc.testing.TestService/UnaryCall", request, 1)
	eventually(t, "the second stalled reply to hold the budget", func() bool { return b.InUse() == 2*replySize })

	_, err = client(t, addr).UnaryCall(context.Background(), &testgrpc.SimpleRequest{ResponseSize: replyBytes})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || reason(st) != rpcerrors.ReasonOverloaded {
		t.Fatalf("a reply past a full budget got %v, want RESOURCE_EXHAUSTED / OVERLOADED", err)
	}
	if got := b.InUse(); got != 2*replySize {
		t.Fatalf("after a refusal the budget holds %d, want %d", got, 2*replySize)
	}
}

func reason(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// TestWritesAreNeverRefusedAfterTheyRan: with room for Floor but not for
// the whole reply, a call that changes nothing is refused once its reply
// is built, while a call that may have written gets its reply over the
// budget (a failed call must change nothing); and with no room even for
// Floor, a write is refused before its handler runs.
func TestWritesAreNeverRefusedAfterTheyRan(t *testing.T) {
	request, err := proto.Marshal(&testgrpc.SimpleRequest{ResponseSize: replyBytes})
	if err != nil {
		t.Fatal(err)
	}
	fill := func(t *testing.T, b *replybudget.Budget, addr string) {
		t.Helper()
		for i := range 2 {
			grpctest.DialStalling(t, addr).Send("/grpc.testing.TestService/UnaryCall", request, 1)
			eventually(t, "a stalled reply to hold the budget", func() bool { return b.InUse() == int64(i+1)*replySize })
		}
	}
	tests := []struct {
		name     string
		room     int64 // what the budget has past the two stalled replies
		plan     replybudget.Planner
		wantCode codes.Code
		wantRuns int64 // handler runs of the third call
	}{
		{"a read past the budget is refused after it ran", 2 * replybudget.Floor, reads, codes.ResourceExhausted, 1},
		{"a write past the budget is answered", 2 * replybudget.Floor, writes, codes.OK, 1},
		{"a write with no room for Floor is refused before it runs", 1 << 10, writes, codes.ResourceExhausted, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := replybudget.New(2*replySize + tt.room)
			addr, ran := servePlanned(t, b, tt.plan)
			fill(t, b, addr)
			before := ran.Load()
			_, err := client(t, addr).UnaryCall(context.Background(), &testgrpc.SimpleRequest{ResponseSize: replyBytes})
			if got := status.Code(err); got != tt.wantCode {
				t.Fatalf("third call: %v, want %v", err, tt.wantCode)
			}
			if got := ran.Load() - before; got != tt.wantRuns {
				t.Errorf("the third call ran its handler %d times, want %d", got, tt.wantRuns)
			}
		})
	}
}
