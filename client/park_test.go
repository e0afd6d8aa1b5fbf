package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// payloadOf is the payload event seq is parked with in these tests.
func payloadOf(seq int64) []byte { return fmt.Appendf(nil, "event-%d", seq) }

// effects is a non-idempotent fake effect: each call appends, so running
// an event twice shows.
type effects struct {
	mu  sync.Mutex
	got []string
}

func (e *effects) apply(seq int64, payload []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, fmt.Sprintf("%d:%s", seq, payload))
}

func (e *effects) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// Events 4, 3 and 2 arrive before 1: each is parked (fn does not run,
// the caller acks). Delivering 1 runs fn on it, then Released on 2, 3
// and 4 in order with the payloads they were parked with; a redelivery of
// a released event is a duplicate. On each store.
func TestDoInOrderParkReleasesInOrder(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		var fx effects
		opt := func(seq int64) client.InOrderOptions {
			return client.InOrderOptions{Park: true, Payload: payloadOf(seq),
				Released: func(_ context.Context, ev *client.ParkedEvent) error {
					fx.apply(ev.GetSequence(), ev.GetPayload())
					return nil
				}}
		}
		deliver := func(seq int64) client.InOrderResult {
			t.Helper()
			res, err := c.DoInOrder(ctx, "shop", "order-9", seq, opt(seq), func(context.Context, int64) error {
				fx.apply(seq, payloadOf(seq))
				return nil
			})
			if err != nil {
				t.Fatalf("deliver %d: %v", seq, err)
			}
			return res
		}
		for _, seq := range []int64{4, 3, 2, 3} {
			if res := deliver(seq); !res.Parked || res.Duplicate || len(res.Released) != 0 {
				t.Fatalf("early event %d: %+v, want parked", seq, res)
			}
		}
		if got := fx.list(); len(got) != 0 {
			t.Fatalf("effects before the gap filled: %v", got)
		}
		res := deliver(1)
		want := []string{"1:event-1", "2:event-2", "3:event-3", "4:event-4"}
		if got := fx.list(); !slices.Equal(got, want) {
			t.Fatalf("effects %v, want %v", got, want)
		}
		if !slices.Equal(res.Released, []int64{2, 3, 4}) || res.Unfinished != nil || res.Stream.GetHighWater() != 4 {
			t.Fatalf("result %+v (stream %v), want 2..4 released and the mark at 4", res, res.Stream)
		}
		if again := deliver(3); !again.Duplicate {
			t.Fatalf("redelivered 3: %+v, want a duplicate", again)
		}
	})
}

// A server that ignores park (an older dedupd) answers SEQUENCE_GAP to a
// claim with park: DoInOrder fails at once with ErrParkUnsupported, after
// one claim, and nothing runs. The older server is this one behind an
// interceptor that drops the field, as an older server's decoder would.
func TestDoInOrderParkUnsupportedFailsClearly(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	var claims atomic.Int64
	dropPark := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r, ok := req.(*dedupv1.ClaimStreamRequest); ok {
			claims.Add(1)
			r.Park, r.Payload = false, nil
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c, ctx := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(dropPark))), testContext(t)
	ran := false
	_, err := c.DoInOrder(ctx, "shop", "order-old", 2, client.InOrderOptions{Park: true, Payload: payloadOf(2),
		Released: func(context.Context, *client.ParkedEvent) error { ran = true; return nil }},
		func(context.Context, int64) error { ran = true; return nil })
	if !errors.Is(err, client.ErrParkUnsupported) || !errors.Is(err, client.ErrSequenceGap) || ran || claims.Load() != 1 {
		t.Fatalf("got %v after %d claims (ran %v); want ErrParkUnsupported after one claim", err, claims.Load(), ran)
	}
	if _, err := c.DoInOrder(ctx, "shop", "order-old", 2, client.InOrderOptions{Park: true},
		func(context.Context, int64) error { return nil }); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("Park without Released: %v", err)
	}
}

// DoInOrder extends the lease while fn runs, for the delivered event and
// for a released one: fn outlives several leases, and meanwhile another
// caller finds the stream held (IN_PROGRESS, no parked event ready).
func TestDoInOrderExtendsTheLease(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	var extends atomic.Int64
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == "/dedup.v1.StreamService/ExtendStreamLease" {
			extends.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c, ctx := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(count))), testContext(t)
	other := newClient(t, addr)
	const lease = time.Second
	// outlive holds fn for three leases, checking that nobody else can
	// take the event meanwhile.
	outlive := func(ctx context.Context, seq int64) error {
		for range 6 {
			time.Sleep(lease / 2)
			claim, err := other.ClaimStream(ctx, "shop", "long", seq, client.StreamClaimOptions{})
			if err != nil || claim.Outcome != client.StreamInProgress {
				return fmt.Errorf("another caller's claim of %d while it runs: %+v, %w", seq, claim, err)
			}
			if ev, _, err := other.ClaimParked(ctx, "shop", "long", 0, "thief"); err != nil || ev != nil {
				return fmt.Errorf("ClaimParked while %d runs: %v, %w", seq, ev, err)
			}
		}
		return nil
	}
	opt := client.InOrderOptions{LeaseTTL: lease, Park: true, Payload: payloadOf(2),
		Released: func(ctx context.Context, ev *client.ParkedEvent) error { return outlive(ctx, ev.GetSequence()) }}
	early := func(context.Context, int64) error { return errors.New("fn ran on an early event") }
	if res, err := c.DoInOrder(ctx, "shop", "long", 2, opt, early); err != nil || !res.Parked {
		t.Fatalf("park 2: %+v, %v", res, err)
	}
	opt.Payload = payloadOf(1)
	res, err := c.DoInOrder(ctx, "shop", "long", 1, opt, func(ctx context.Context, _ int64) error { return outlive(ctx, 1) })
	if err != nil || res.UnfinishedErr != nil || !slices.Equal(res.Released, []int64{2}) || res.Stream.GetHighWater() != 2 {
		t.Fatalf("got %+v, %v; want 1 and 2 done", res, err)
	}
	if n := extends.Load(); n < 4 {
		t.Fatalf("%d lease extensions over two runs of three leases each, want at least 4", n)
	}
}

// Losing the lease cancels what runs under it, as in Do: an operator's
// ResetStream drops the claim in flight, the next extension is refused,
// and the context of fn (the delivered event) or of Released (a parked
// one handed back) ends with a cause matching ErrLeaseLost. Nothing is
// recorded for the event: its outcome is unknown.
func TestDoInOrderLeaseLossCancels(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	c, ctx := newClient(t, addr), testContext(t)
	const lease = time.Second
	// holdUntilLost blocks until its context ends, with the stream reset
	// by hand meanwhile, and returns the cause.
	holdUntilLost := func(ctx context.Context, stream string, mark int64) error {
		if _, err := c.StreamAdmin().ResetStream(ctx, &dedupv1.ResetStreamRequest{Consumer: "shop", Stream: stream, HighWater: mark}); err != nil {
			return err
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}
	t.Run("fn", func(t *testing.T) {
		var cause error
		_, err := c.DoInOrder(ctx, "shop", "reset-fn", 1, client.InOrderOptions{LeaseTTL: lease},
			func(ctx context.Context, _ int64) error { cause = holdUntilLost(ctx, "reset-fn", 0); return cause })
		if !errors.Is(cause, client.ErrLeaseLost) || !errors.Is(err, client.ErrOutcomeUnknown) {
			t.Fatalf("fn saw %v; DoInOrder returned %v; want a lease loss, outcome unknown", cause, err)
		}
	})
	t.Run("released", func(t *testing.T) {
		var cause error
		opt := client.InOrderOptions{LeaseTTL: lease, Park: true, Payload: payloadOf(2),
			Released: func(ctx context.Context, ev *client.ParkedEvent) error {
				cause = holdUntilLost(ctx, "reset-released", 1)
				return cause
			}}
		early := func(context.Context, int64) error { return errors.New("fn ran on an early event") }
		if res, err := c.DoInOrder(ctx, "shop", "reset-released", 2, opt, early); err != nil || !res.Parked {
			t.Fatalf("park 2: %+v, %v", res, err)
		}
		res, err := c.DoInOrder(ctx, "shop", "reset-released", 1, opt, func(context.Context, int64) error { return nil })
		if err != nil || res.Unfinished.GetSequence() != 2 || !errors.Is(res.UnfinishedErr, client.ErrOutcomeUnknown) ||
			!errors.Is(res.UnfinishedErr, client.ErrLeaseLost) || !errors.Is(cause, client.ErrLeaseLost) {
			t.Fatalf("Released saw %v; got %+v, %v; want 2 unfinished after a lease loss", cause, res, err)
		}
	})
}
