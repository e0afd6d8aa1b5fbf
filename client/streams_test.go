package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
)

// The typed stream calls through a real dedupd, on each store: in order,
// a duplicate skipped, a gap refused with the expected sequence.
func TestStreamCalls(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c := newClient(t, addr)
		ctx := testContext(t)
		first, err := c.ClaimStream(ctx, "orders", "order-42", 1, client.StreamClaimOptions{Owner: "w"})
		if err != nil || first.Outcome != client.StreamAcquired || first.FencingToken == 0 {
			t.Fatalf("claim 1: %+v, %v", first, err)
		}
		if st, err := c.CompleteStream(ctx, "orders", "order-42", 1, first.FencingToken); err != nil || st.GetHighWater() != 1 {
			t.Fatalf("complete 1: %v, %v", st, err)
		}
		dup, err := c.ClaimStream(ctx, "orders", "order-42", 1, client.StreamClaimOptions{})
		if err != nil || dup.Outcome != client.StreamDuplicate || dup.Stream.GetHighWater() != 1 {
			t.Fatalf("duplicate: %+v, %v", dup, err)
		}
		_, err = c.ClaimStream(ctx, "orders", "order-42", 3, client.StreamClaimOptions{})
		var gap *client.GapError
		if !errors.Is(err, client.ErrSequenceGap) || !errors.As(err, &gap) || gap.Expected != 2 || gap.Sequence != 3 {
			t.Fatalf("gap: %v", err)
		}
		if _, err := c.GetStream(ctx, "orders", "order-0"); !errors.Is(err, client.ErrStreamNotFound) {
			t.Fatalf("unknown stream: %v", err)
		}
	})
}

// DoInOrder under a redelivering loop: events arrive shuffled and
// repeated; a gap is put back at the end of the queue. Each event's effect
// runs exactly once, in sequence order.
func TestDoInOrder(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	c := newClient(t, addr)
	ctx := testContext(t)
	queue := []int64{3, 1, 3, 2, 1, 4, 2}
	var applied []int64
	gaps, dups := 0, 0
	for len(queue) > 0 {
		seq := queue[0]
		queue = queue[1:]
		res, err := c.DoInOrder(ctx, "orders", "order-7", seq, client.InOrderOptions{},
			func(ctx context.Context, token int64) error {
				applied = append(applied, seq)
				return nil
			})
		var gap *client.GapError
		switch {
		case errors.As(err, &gap):
			gaps++
			queue = append(queue, seq) // redeliver later
		case err != nil:
			t.Fatal(err)
		case res.Duplicate:
			dups++
		}
	}
	if !slices.Equal(applied, []int64{1, 2, 3, 4}) {
		t.Fatalf("applied %v, want each of 1..4 once, in order", applied)
	}
	if gaps == 0 || dups != 3 {
		t.Fatalf("%d gaps, %d duplicates; want some gaps and the 3 repeats", gaps, dups)
	}
}

// A terminal failure is a poison event: recorded, skipped past. Any other
// failure releases the event to run again.
func TestDoInOrderFailures(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	c := newClient(t, addr)
	ctx := testContext(t)
	boom := errors.New("boom")
	_, err := c.DoInOrder(ctx, "orders", "s", 1, client.InOrderOptions{}, func(context.Context, int64) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("plain failure: %v", err)
	}
	runs := 0
	_, err = c.DoInOrder(ctx, "orders", "s", 1, client.InOrderOptions{}, func(context.Context, int64) error {
		runs++
		return client.Terminal("UNPARSEABLE", boom, nil)
	})
	if !errors.Is(err, client.ErrRejected) || runs != 1 {
		t.Fatalf("terminal failure: %v after %d runs", err, runs)
	}
	st, err := c.GetStream(ctx, "orders", "s")
	if err != nil || st.GetHighWater() != 1 || st.GetRejected() != 1 || st.GetLastRejection().GetReason() != "UNPARSEABLE" {
		t.Fatalf("after the poison event: %v, %v", st, err)
	}
	res, err := c.DoInOrder(ctx, "orders", "s", 2, client.InOrderOptions{}, func(context.Context, int64) error { return nil })
	if err != nil || res.Stream.GetHighWater() != 2 {
		t.Fatalf("the stream goes on: %+v, %v", res, err)
	}
}

// DoInOrder behind another holder of the stream answers DUPLICATE once the
// holder completes the sequence: with one claim that the server holds, or,
// against a server that does not wait (as an older one), by polling. A
// park-mode DoInOrder asks the server to wait too.
func TestDoInOrderWaitsForTheHolder(t *testing.T) {
	for _, tt := range []struct {
		name        string
		flags       []string
		serverWaits bool
		park        bool
	}{
		{"server waits", nil, true, false},
		{"server answers at once", []string{"--max-claim-wait=0"}, false, false},
		{"park mode, server waits", nil, true, true},
		{"park mode, server answers at once", []string{"--max-claim-wait=0"}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var counter callCounter
			addr := dedupdtest.Start(t, dedupdtest.Embedded, tt.flags...)
			c := newClient(t, addr, client.WithDialOptions(grpc.WithUnaryInterceptor(counter.interceptor())))
			ctx := testContext(t)
			held, err := c.ClaimStream(ctx, "orders", "order-9", 1, client.StreamClaimOptions{LeaseTTL: time.Hour, Owner: "holder"})
			if err != nil {
				t.Fatal(err)
			}
			completed := make(chan struct{}) // the waiter's answer may overtake the holder's
			defer func() { <-completed }()
			go func() {
				defer close(completed)
				if tt.serverWaits {
					waitFor(t, "the waiter to claim", func() bool { return counter.streamClaims.Load() >= 2 })
					time.Sleep(300 * time.Millisecond) // a polling DoInOrder would claim again meanwhile
				} else {
					waitFor(t, "the waiter to poll", func() bool { return counter.streamClaims.Load() >= 3 })
				}
				if _, err := c.CompleteStream(ctx, "orders", "order-9", 1, held.FencingToken); err != nil {
					t.Error(err)
				}
			}()
			opt := client.InOrderOptions{MaxWait: time.Hour}
			if tt.park {
				opt.Park, opt.Payload = true, []byte("order-9 #1")
				opt.Released = func(context.Context, *client.ParkedEvent) error {
					t.Error("Released ran, but nothing was parked")
					return nil
				}
			}
			res, err := c.DoInOrder(ctx, "orders", "order-9", 1, opt,
				func(context.Context, int64) error {
					t.Error("fn ran for a sequence another caller held and completed")
					return nil
				})
			if err != nil || !res.Duplicate {
				t.Fatalf("DoInOrder = %+v, %v; want a duplicate once the holder completed", res, err)
			}
			claims := counter.streamClaims.Load() - 1
			if tt.serverWaits && claims != 1 || !tt.serverWaits && claims < 2 {
				t.Fatalf("DoInOrder claimed %d times (server waits: %v)", claims, tt.serverWaits)
			}
		})
	}
}
