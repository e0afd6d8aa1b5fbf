package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
)

const extendMethod = "/dedup.v1.DedupService/ExtendLease"

// TestDoExtendsTheLease: fn outlives its lease several times over; Do
// keeps extending it, so another caller keeps finding the key in progress
// and fn's result is stored under the first token.
func TestDoExtendsTheLease(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		var counter callCounter
		c := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(counter.interceptor())))
		other := newClient(t, addr)
		ctx := testContext(t)
		res, err := c.Do(ctx, "shop", "long", nil, client.DoOptions{LeaseTTL: time.Second},
			func(ctx context.Context, a client.Attempt) ([]byte, error) {
				firstLeaseEnd := a.Record.GetLeaseExpiresAt().AsTime()
				waitFor(t, "the first lease to run out", func() bool {
					return time.Now().After(firstLeaseEnd.Add(500*time.Millisecond)) && counter.extends.Load() >= 2
				})
				busy, err := other.Claim(ctx, "shop", "long", nil, client.ClaimOptions{})
				if err != nil || busy.Outcome != client.InProgress {
					t.Errorf("claim past the first lease = %+v, %v; want IN_PROGRESS", busy, err)
				}
				return []byte("long work"), ctx.Err()
			})
		if err != nil || string(res.Result) != "long work" || res.Record.GetFencingToken() != 1 {
			t.Fatalf("Do = %+v, %v; want the result stored under token 1", res, err)
		}
	})
}

// TestDoCancelsOnLeaseLoss: the server says the lease is gone (another
// caller took the key over while extensions could not get through); fn's
// context is cancelled with ErrLeaseLost, nothing is recorded under the
// old token, and the new holder completes.
func TestDoCancelsOnLeaseLoss(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		takenOver := make(chan struct{})
		holdExtensions := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if method == extendMethod {
				<-takenOver
				return invoker(context.WithoutCancel(ctx), method, req, reply, cc, opts...)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		c := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(holdExtensions)))
		other := newClient(t, addr)
		ctx := testContext(t)
		var newToken int64
		_, err := c.Do(ctx, "shop", "lost", nil, client.DoOptions{LeaseTTL: 300 * time.Millisecond},
			func(fnCtx context.Context, a client.Attempt) ([]byte, error) {
				waitFor(t, "another caller to take the key over", func() bool {
					r, err := other.Claim(ctx, "shop", "lost", nil, client.ClaimOptions{Owner: "successor"})
					newToken = r.FencingToken
					return err == nil && r.Outcome == client.Acquired
				})
				close(takenOver)
				<-fnCtx.Done()
				if !errors.Is(context.Cause(fnCtx), client.ErrLeaseLost) {
					t.Errorf("fn's context ended with %v, want ErrLeaseLost", context.Cause(fnCtx))
				}
				return nil, fnCtx.Err()
			})
		if !errors.Is(err, client.ErrLeaseLost) {
			t.Fatalf("Do = %v; want ErrLeaseLost", err)
		}
		if _, err := other.Complete(ctx, "shop", "lost", newToken, []byte("successor")); err != nil {
			t.Fatalf("the successor's Complete = %v", err)
		}
	})
}

// TestDoCancelsWhenTheLeaseRunsOut: no extension gets through (the
// server is unreachable for them); when the lease has run out locally, fn's
// context is cancelled with ErrLeaseLost.
func TestDoCancelsWhenTheLeaseRunsOut(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		failExtensions := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if method == extendMethod {
				return status.Error(codes.Unavailable, "injected outage")
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		c := newClient(t, addr, client.WithRetries(1),
			client.WithDialOptions(grpc.WithUnaryInterceptor(failExtensions)))
		ctx := testContext(t)
		_, err := c.Do(ctx, "shop", "outage", nil, client.DoOptions{LeaseTTL: 300 * time.Millisecond},
			func(fnCtx context.Context, a client.Attempt) ([]byte, error) {
				<-fnCtx.Done()
				return nil, fnCtx.Err()
			})
		// The last extension ends in UNAVAILABLE or in its deadline (the
		// lease's end), whichever comes first; the server never said LEASE_LOST.
		var e *client.Error
		if !errors.Is(err, client.ErrLeaseLost) || !errors.As(err, &e) || e.Reason == "LEASE_LOST" {
			t.Fatalf("Do = %v; want a local ErrLeaseLost caused by the failed extensions", err)
		}
	})
}

// TestDoPanicLeavesThePendingClaim: a panicking fn is a crash: nothing is
// recorded, and the key stays PENDING under its lease.
func TestDoPanicLeavesThePendingClaim(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the panic did not reach the caller")
				}
			}()
			_, _ = c.Do(ctx, "shop", "panic", nil, client.DoOptions{LeaseTTL: time.Hour},
				func(context.Context, client.Attempt) ([]byte, error) { panic("crash") })
		}()
		busy, err := c.Claim(ctx, "shop", "panic", nil, client.ClaimOptions{})
		if err != nil || busy.Outcome != client.InProgress {
			t.Fatalf("claim after the crash = %+v, %v; want IN_PROGRESS", busy, err)
		}
	})
}
