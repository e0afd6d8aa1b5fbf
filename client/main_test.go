package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
)

func TestMain(m *testing.M) {
	if crashChild() { // a child process of TestParkedCrashes: never returns
		return
	}
	dedupdtest.Main(m)
}

func newClient(t testing.TB, addr string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// callCounter counts the calls of each method that leave the client.
type callCounter struct {
	claims, extends, streamClaims              atomic.Int64
	claimBatches, extendBatches, finishBatches atomic.Int64
}

func (c *callCounter) interceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch method {
		case "/dedup.v1.DedupService/Claim":
			c.claims.Add(1)
		case "/dedup.v1.StreamService/ClaimStream":
			c.streamClaims.Add(1)
		case "/dedup.v1.DedupService/ExtendLease":
			c.extends.Add(1)
		case "/dedup.v1.DedupService/ClaimBatch":
			c.claimBatches.Add(1)
		case "/dedup.v1.DedupService/ExtendLeaseBatch":
			c.extendBatches.Add(1)
		case "/dedup.v1.DedupService/FinishBatch":
			c.finishBatches.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// waitFor polls cond until it holds; the test's deadline bounds it.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if deadline, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
			if d, set := deadline.Deadline(); set && time.Until(d) < time.Second {
				t.Fatalf("gave up waiting for %s", what)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
