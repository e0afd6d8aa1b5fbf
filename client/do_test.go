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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

var errOutOfStock = errors.New("out of stock")

func TestDoOutcomes(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		digest := client.Digest([]byte("e1"))
		var runs atomic.Int64
		work := func(ctx context.Context, a client.Attempt) ([]byte, error) {
			runs.Add(1)
			return fmt.Appendf(nil, "done with token %d", a.FencingToken), nil
		}

		res, err := c.Do(ctx, "shop", "e1", digest, client.DoOptions{}, work)
		if err != nil || res.Replayed || string(res.Result) != "done with token 1" {
			t.Fatalf("first Do = %+v, %v", res, err)
		}
		res, err = c.Do(ctx, "shop", "e1", digest, client.DoOptions{}, work)
		if err != nil || !res.Replayed || string(res.Result) != "done with token 1" || runs.Load() != 1 {
			t.Fatalf("second Do = %+v, %v, runs %d; want a replay without running", res, err, runs.Load())
		}
		_, err = c.Do(ctx, "shop", "e1", client.Digest([]byte("other")), client.DoOptions{}, work)
		if !errors.Is(err, client.ErrDigestMismatch) || runs.Load() != 1 {
			t.Fatalf("Do with other content = %v; want ErrDigestMismatch without running", err)
		}

		refuse := func(ctx context.Context, a client.Attempt) ([]byte, error) {
			runs.Add(1)
			return nil, client.Terminal("OUT_OF_STOCK", errOutOfStock, []byte("detail"))
		}
		_, err = c.Do(ctx, "shop", "e2", digest, client.DoOptions{}, refuse)
		var rejected *client.RejectedError
		if !errors.As(err, &rejected) || rejected.Replayed || !errors.Is(err, errOutOfStock) ||
			rejected.Rejection.Reason != "OUT_OF_STOCK" || string(rejected.Rejection.Detail) != "detail" {
			t.Fatalf("Do with a terminal failure = %v; want a fresh RejectedError wrapping errOutOfStock", err)
		}
		_, err = c.Do(ctx, "shop", "e2", digest, client.DoOptions{}, work)
		if !errors.As(err, &rejected) || !rejected.Replayed || !errors.Is(err, client.ErrRejected) ||
			rejected.Rejection.Message != errOutOfStock.Error() || runs.Load() != 2 {
			t.Fatalf("Do of a rejected key = %v, runs %d; want a replayed rejection without running", err, runs.Load())
		}

		flaky := errors.New("database blip")
		_, err = c.Do(ctx, "shop", "e3", digest, client.DoOptions{}, func(ctx context.Context, a client.Attempt) ([]byte, error) {
			return nil, flaky
		})
		if !errors.Is(err, flaky) {
			t.Fatalf("Do with a plain error = %v; want that error", err)
		}
		var attempt client.Attempt
		_, err = c.Do(ctx, "shop", "e3", digest, client.DoOptions{}, func(ctx context.Context, a client.Attempt) ([]byte, error) {
			attempt = a
			return []byte("ok"), nil
		})
		if err != nil || attempt.Number != 2 || attempt.FencingToken != 2 {
			t.Fatalf("Do after a retryable failure = %v, attempt %+v; want attempt 2 with token 2", err, attempt)
		}
	})
}

// TestDoWaitsOnTheServer: a Do that finds the key held asks the server to
// wait, and the server answers it the holder's outcome as soon as it is
// stored: one claim, however long the holder takes.
func TestDoWaitsOnTheServer(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		var counter callCounter
		c := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(counter.interceptor())))
		ctx := testContext(t)
		held, err := c.Claim(ctx, "shop", "waited", nil, client.ClaimOptions{LeaseTTL: time.Hour, Owner: "holder"})
		if err != nil {
			t.Fatal(err)
		}
		completed := make(chan struct{}) // the waiter's answer may overtake the holder's
		defer func() { <-completed }()
		go func() {
			defer close(completed)
			waitFor(t, "the waiter to claim", func() bool { return counter.claims.Load() >= 2 })
			time.Sleep(300 * time.Millisecond) // a polling Do would claim again meanwhile
			if _, err := c.Complete(ctx, "shop", "waited", held.FencingToken, []byte("holder's result")); err != nil {
				t.Error(err)
			}
		}()
		res, err := c.Do(ctx, "shop", "waited", nil, client.DoOptions{MaxWait: time.Hour}, func(context.Context, client.Attempt) ([]byte, error) {
			t.Error("fn ran while another caller held the key")
			return nil, nil
		})
		if err != nil || !res.Replayed || string(res.Result) != "holder's result" {
			t.Fatalf("waiting Do = %+v, %v; want the holder's result replayed", res, err)
		}
		if n := counter.claims.Load() - 1; n != 1 {
			t.Fatalf("Do claimed %d times; want once, the server doing the waiting", n)
		}
	})
}

// TestDoWaitsForTheHolder: against a server that does not wait (as one
// older than ClaimRequest.wait, which ignores the field), a Do that finds
// the key held polls and then replays the holder's outcome; with a small
// MaxWait it gives up with a typed error; once the holder's lease runs out
// it takes the key over.
func TestDoWaitsForTheHolder(t *testing.T) {
	dedupdtest.ForEach(t, []string{"--max-claim-wait=0"}, func(t *testing.T, addr string) {
		var counter callCounter
		c := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(counter.interceptor())))
		ctx := testContext(t)
		digest := client.Digest([]byte("e"))
		neverRun := func(context.Context, client.Attempt) ([]byte, error) {
			t.Error("fn ran while another caller held the key")
			return nil, nil
		}

		held, err := c.Claim(ctx, "shop", "waited", digest, client.ClaimOptions{LeaseTTL: time.Hour, Owner: "holder"})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			waitFor(t, "the waiter to claim twice", func() bool { return counter.claims.Load() >= 3 })
			if _, err := c.Complete(ctx, "shop", "waited", held.FencingToken, []byte("holder's result")); err != nil {
				t.Error(err)
			}
		}()
		res, err := c.Do(ctx, "shop", "waited", digest, client.DoOptions{MaxWait: time.Hour}, neverRun)
		if err != nil || !res.Replayed || string(res.Result) != "holder's result" {
			t.Fatalf("waiting Do = %+v, %v; want the holder's result replayed", res, err)
		}

		if _, err := c.Claim(ctx, "shop", "stuck", digest, client.ClaimOptions{LeaseTTL: time.Hour, Owner: "holder"}); err != nil {
			t.Fatal(err)
		}
		_, err = c.Do(ctx, "shop", "stuck", digest, client.DoOptions{MaxWait: 100 * time.Millisecond}, neverRun)
		var inProgress *client.InProgressError
		if !errors.Is(err, client.ErrInProgressTimeout) || !errors.As(err, &inProgress) ||
			inProgress.Record.GetOwner() != "holder" || inProgress.Claims < 1 {
			t.Fatalf("Do on a stuck key = %v; want an InProgressError naming the holder", err)
		}
		_, err = c.Do(ctx, "shop", "stuck", digest, client.DoOptions{MaxWait: -1}, neverRun)
		if !errors.As(err, &inProgress) || inProgress.Claims != 1 {
			t.Fatalf("Do without waiting = %v; want an InProgressError after one claim", err)
		}

		if _, err := c.Claim(ctx, "shop", "crashed", digest, client.ClaimOptions{LeaseTTL: 200 * time.Millisecond, Owner: "crashed"}); err != nil {
			t.Fatal(err)
		}
		var attempt client.Attempt
		_, err = c.Do(ctx, "shop", "crashed", digest, client.DoOptions{MaxWait: time.Hour}, func(ctx context.Context, a client.Attempt) ([]byte, error) {
			attempt = a
			return nil, nil
		})
		if err != nil || attempt.FencingToken != 2 || attempt.Number != 2 {
			t.Fatalf("Do after the holder's lease ran out = %v, attempt %+v; want token 2", err, attempt)
		}
	})
}

// TestDoRecoversItsOwnClaim: the reply of a Claim that the server applied
// is lost; the client retries, the server answers IN_PROGRESS for Do's own
// lease, and Do carries on with that lease instead of waiting it out.
func TestDoRecoversItsOwnClaim(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		var lost atomic.Bool
		loseFirstClaimReply := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if method == "/dedup.v1.DedupService/Claim" && err == nil && lost.CompareAndSwap(false, true) {
				return status.Error(codes.Unavailable, "connection reset after the claim was applied")
			}
			return err
		}
		c := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(loseFirstClaimReply)))
		ctx := testContext(t)
		var attempt client.Attempt
		res, err := c.Do(ctx, "shop", "k", nil, client.DoOptions{LeaseTTL: time.Hour, MaxWait: -1},
			func(ctx context.Context, a client.Attempt) ([]byte, error) {
				attempt = a
				return []byte("ok"), nil
			})
		if err != nil || !lost.Load() || attempt.FencingToken != 1 || res.Record.GetState() != dedupv1.State_STATE_COMPLETED {
			t.Fatalf("Do = %+v, %v (reply lost: %v, attempt %+v); want completion under token 1", res, err, lost.Load(), attempt)
		}
	})
}

// TestDoRunsOnceUnderRace: many concurrent Do calls of one key run fn
// once and all report its result.
func TestDoRunsOnceUnderRace(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		var runs atomic.Int64
		var wg sync.WaitGroup
		results := make([]string, 16)
		errs := make([]error, 16)
		for i := range results {
			wg.Go(func() {
				res, err := c.Do(ctx, "shop", "race", client.Digest([]byte("x")), client.DoOptions{MaxWait: time.Hour},
					func(ctx context.Context, a client.Attempt) ([]byte, error) {
						runs.Add(1)
						return fmt.Appendf(nil, "run %d", i), nil
					})
				results[i], errs[i] = string(res.Result), err
			})
		}
		wg.Wait()
		if runs.Load() != 1 {
			t.Fatalf("fn ran %d times, want once", runs.Load())
		}
		for i := range results {
			if errs[i] != nil || results[i] != results[0] {
				t.Fatalf("caller %d got %q, %v; caller 0 got %q", i, results[i], errs[i], results[0])
			}
		}
	})
}
