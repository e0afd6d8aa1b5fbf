package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

var errGatewayDown = errors.New("gateway lookup failed")

// crashedClaim leaves key of consumer "pay" as a crashed holder would: claimed under token 1
// and never finished, with a lease that has run out. The next acquisition
// is attempt 2.
func crashedClaim(t *testing.T, ctx context.Context, c *client.Client, key string) {
	t.Helper()
	if _, err := c.Claim(ctx, "pay", key, nil, client.ClaimOptions{LeaseTTL: 100 * time.Millisecond, Owner: "crashed"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crashed holder's lease to run out", func() bool {
		r, err := c.Lookup(ctx, "pay", key)
		return err == nil && time.Now().After(r.GetLeaseExpiresAt().AsTime().Add(20*time.Millisecond))
	})
}

// TestDoSettle: on a takeover, Settle's answer decides whether fn runs and
// what is stored; the expected states are those of the settle contract in
// docs/guarantees.md.
func TestDoSettle(t *testing.T) {
	cases := []struct {
		name   string
		settle func(a client.Attempt) ([]byte, bool, error)
		// wantRun: fn runs; wantState, wantResult: the record after Do.
		wantRun    bool
		wantState  dedupv1.State
		wantResult string
		wantErr    []error
	}{
		{name: "found", settle: func(a client.Attempt) ([]byte, bool, error) { return []byte("charge-1"), true, nil },
			wantState: dedupv1.State_STATE_COMPLETED, wantResult: "charge-1"},
		{name: "not found", settle: func(a client.Attempt) ([]byte, bool, error) { return nil, false, nil },
			wantRun: true, wantState: dedupv1.State_STATE_COMPLETED, wantResult: "fn's result"},
		{name: "terminal", settle: func(a client.Attempt) ([]byte, bool, error) {
			return nil, false, client.Terminal("CARD_DECLINED", errors.New("declined at the gateway"), nil)
		}, wantState: dedupv1.State_STATE_REJECTED, wantErr: []error{client.ErrRejected}},
		{name: "fails", settle: func(a client.Attempt) ([]byte, bool, error) { return nil, false, errGatewayDown },
			wantState: dedupv1.State_STATE_PENDING,
			wantErr:   []error{client.ErrSettleFailed, client.ErrOutcomeUnknown, errGatewayDown}},
		{name: "fails with a retryable error", settle: func(a client.Attempt) ([]byte, bool, error) {
			return nil, false, client.Retryable("LOOKUP", errGatewayDown)
		}, wantState: dedupv1.State_STATE_PENDING, wantErr: []error{client.ErrSettleFailed, errGatewayDown}},
	}
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		for i, tc := range cases {
			key := fmt.Sprintf("k%d", i)
			crashedClaim(t, ctx, c, key)
			var ran bool
			var seen client.Attempt
			res, err := c.Do(ctx, "pay", key, nil, client.DoOptions{LeaseTTL: time.Hour,
				Settle: func(_ context.Context, a client.Attempt) ([]byte, bool, error) {
					seen = a
					return tc.settle(a)
				}},
				func(context.Context, client.Attempt) ([]byte, error) {
					ran = true
					return []byte("fn's result"), nil
				})
			if seen.Number != 2 || seen.FencingToken != 2 || seen.Record.GetKey() != key {
				t.Errorf("%s: settle saw %+v; want attempt 2 under token 2", tc.name, seen)
			}
			if ran != tc.wantRun {
				t.Errorf("%s: fn ran: %v, want %v", tc.name, ran, tc.wantRun)
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("%s: Do error %v does not match %v", tc.name, err, want)
				}
			}
			if tc.wantErr == nil && (err != nil || string(res.Result) != tc.wantResult || res.Settled == tc.wantRun) {
				t.Errorf("%s: Do = %+v, %v; want result %q, settled %v", tc.name, res, err, tc.wantResult, !tc.wantRun)
			}
			rec, err := c.Lookup(ctx, "pay", key)
			if err != nil || rec.GetState() != tc.wantState || string(rec.GetResult()) != tc.wantResult || rec.GetFencingToken() != 2 {
				t.Errorf("%s: record %v, %v; want %s with result %q under token 2", tc.name, rec, err, tc.wantState, tc.wantResult)
			}
		}

		// A first attempt has no earlier holder: Settle does not run.
		res, err := c.Do(ctx, "pay", "fresh", nil, client.DoOptions{
			Settle: func(context.Context, client.Attempt) ([]byte, bool, error) {
				t.Error("settle ran on attempt 1")
				return nil, true, nil
			}},
			func(context.Context, client.Attempt) ([]byte, error) { return []byte("first"), nil })
		if err != nil || res.Settled || string(res.Result) != "first" {
			t.Errorf("Do of a fresh key = %+v, %v; want fn's result", res, err)
		}
	})
}

// TestDoLeavesAmbiguousFailuresPending: an error that may hide an effect
// (a timeout, a cancellation) leaves the claim PENDING; an ordinary error
// releases it, and the next Do settles before running fn again.
func TestDoLeavesAmbiguousFailuresPending(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		state := func(key string) dedupv1.State {
			rec, err := c.Lookup(ctx, "pay", key)
			if err != nil {
				t.Fatal(err)
			}
			return rec.GetState()
		}
		opt := client.DoOptions{LeaseTTL: time.Hour}

		_, err := c.Do(ctx, "pay", "timeout", nil, opt, func(context.Context, client.Attempt) ([]byte, error) {
			return nil, fmt.Errorf("charging: %w", context.DeadlineExceeded)
		})
		if !errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrSettleFailed) || state("timeout") != dedupv1.State_STATE_PENDING {
			t.Errorf("fn timed out: %v, %s; want ErrOutcomeUnknown and PENDING", err, state("timeout"))
		}

		errBrokenPipe := errors.New("connection reset after the request was sent")
		_, err = c.Do(ctx, "pay", "marked", nil, opt, func(context.Context, client.Attempt) ([]byte, error) {
			return nil, client.Unknown(errBrokenPipe)
		})
		if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, errBrokenPipe) || state("marked") != dedupv1.State_STATE_PENDING {
			t.Errorf("fn marked its failure Unknown: %v, %s; want ErrOutcomeUnknown wrapping it and PENDING", err, state("marked"))
		}

		callerCtx, cancel := context.WithCancel(ctx)
		_, err = c.Do(callerCtx, "pay", "cancelled", nil, opt, func(ctx context.Context, _ client.Attempt) ([]byte, error) {
			cancel()
			<-ctx.Done()
			return nil, errors.New("gave up")
		})
		if !errors.Is(err, client.ErrOutcomeUnknown) || state("cancelled") != dedupv1.State_STATE_PENDING {
			t.Errorf("caller cancelled: %v, %s; want ErrOutcomeUnknown and PENDING", err, state("cancelled"))
		}

		_, err = c.Do(ctx, "pay", "plain", nil, opt, func(context.Context, client.Attempt) ([]byte, error) {
			return nil, errOutOfStock
		})
		if !errors.Is(err, errOutOfStock) || errors.Is(err, client.ErrOutcomeUnknown) || state("plain") != dedupv1.State_STATE_RELEASED {
			t.Errorf("plain error: %v, %s; want it returned and RELEASED", err, state("plain"))
		}
		var settles atomic.Int64
		res, err := c.Do(ctx, "pay", "plain", nil, client.DoOptions{Settle: func(_ context.Context, a client.Attempt) ([]byte, bool, error) {
			settles.Add(1)
			return nil, false, nil
		}}, func(_ context.Context, a client.Attempt) ([]byte, error) {
			return fmt.Appendf(nil, "attempt %d", a.Number), nil
		})
		if err != nil || string(res.Result) != "attempt 2" || settles.Load() != 1 {
			t.Errorf("Do after a release = %+v, %v, %d settles; want settle once, then fn as attempt 2", res, err, settles.Load())
		}
	})
}

// TestReconcilerTakesTheSettleFunc: the function a consumer gives Do
// settles the same keys in a Reconciler.
func TestReconcilerTakesTheSettleFunc(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		charged := map[string]string{"paid": "charge-9"}
		settle := func(_ context.Context, a client.Attempt) ([]byte, bool, error) {
			switch id, ok := charged[a.Record.GetKey()]; {
			case a.Record.GetKey() == "broken":
				return nil, false, client.Terminal("BAD_EVENT", errors.New("no such account"), nil)
			case ok:
				return []byte(id), true, nil
			}
			return nil, false, nil
		}
		for _, key := range []string{"paid", "unpaid", "broken"} {
			crashedClaim(t, ctx, c, key)
		}
		report, err := (&client.Reconciler{Client: c, Consumer: "pay", Settle: settle}).Run(ctx)
		if want := (client.ReconcileReport{Completed: 1, Rejected: 1, Released: 1}); err != nil || report != want {
			t.Fatalf("Run = %+v, %v; want %+v", report, err, want)
		}
		want := map[string]dedupv1.State{"paid": dedupv1.State_STATE_COMPLETED, "unpaid": dedupv1.State_STATE_RELEASED,
			"broken": dedupv1.State_STATE_REJECTED}
		for key, state := range want {
			if rec, err := c.Lookup(ctx, "pay", key); err != nil || rec.GetState() != state || string(rec.GetResult()) != charged[key] {
				t.Errorf("%s: %v, %v; want %s", key, rec, err, state)
			}
		}
		if _, err := (&client.Reconciler{Client: c, Consumer: "pay"}).Run(ctx); err == nil {
			t.Error("a Reconciler with neither Settle nor Check ran")
		}
	})
}

// TestSettlePanicLeavesThePendingClaim: a panicking Settle is a crash too:
// nothing is recorded, fn does not run, and the key stays PENDING under the
// new holder's lease.
func TestSettlePanicLeavesThePendingClaim(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	c, ctx := newClient(t, addr), testContext(t)
	crashedClaim(t, ctx, c, "k")
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the caller")
			}
		}()
		_, _ = c.Do(ctx, "pay", "k", nil, client.DoOptions{LeaseTTL: time.Hour,
			Settle: func(context.Context, client.Attempt) ([]byte, bool, error) { panic("crash in settle") }},
			func(context.Context, client.Attempt) ([]byte, error) {
				t.Error("fn ran after settle panicked")
				return nil, nil
			})
	}()
	rec, err := c.Lookup(ctx, "pay", "k")
	if err != nil || rec.GetState() != dedupv1.State_STATE_PENDING || rec.GetFencingToken() != 2 ||
		!rec.GetLeaseExpiresAt().AsTime().After(time.Now().Add(time.Minute)) {
		t.Fatalf("after settle panicked: %v, %v; want PENDING under token 2 with the hour's lease", rec, err)
	}
}
