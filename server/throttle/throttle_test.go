package throttle

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/tap"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// methodStream is the least a context needs for grpc.Method to name a
// method.
type methodStream struct{ method string }

func (s methodStream) Method() string             { return s.method }
func (methodStream) SetHeader(metadata.MD) error  { return nil }
func (methodStream) SendHeader(metadata.MD) error { return nil }
func (methodStream) SetTrailer(metadata.MD) error { return nil }
func lookupCall(name string) context.Context {
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), methodStream{"/dedup.v1.DedupService/Lookup"})
	return consumer.NewContext(ctx, &dedupv1.LookupRequest{Consumer: name, Key: "k"})
}

// TestInvalidConsumerNamesGetNoBucket: names the handler will refuse are
// not kept, however many and however long, while a valid consumer is
// still held to its rate.
func TestInvalidConsumerNamesGetNoBucket(t *testing.T) {
	p := NewPerConsumer(0.001, 1) // no refill during the test
	invalid := []string{"", "Upper", "-lead", strings.Repeat("x", 129), strings.Repeat("y", 1<<20)}
	for _, name := range invalid {
		for range 2 {
			if err := p.Limit(lookupCall(name)); err != nil {
				t.Fatalf("invalid name of %d bytes: %v, want it left to validation", len(name), err)
			}
		}
	}
	if n := len(p.buckets); n != 0 {
		t.Fatalf("%d buckets kept for names the handler refuses, want 0", n)
	}
	if err := p.Limit(lookupCall("inventory")); err != nil {
		t.Fatalf("first call of a valid consumer: %v", err)
	}
	if err := p.Limit(lookupCall("inventory")); !errors.Is(err, rpcerrors.ErrRateLimited) {
		t.Fatalf("second call of a valid consumer: %v, want ErrRateLimited", err)
	}
}

// TestIdleBucketsAreSweptAtMostOncePerRefill: past sweepAt buckets, the
// full ones are dropped, but the walk over all of them under the lock runs
// at most once per refill period, not on every new consumer's first call.
func TestIdleBucketsAreSweptAtMostOncePerRefill(t *testing.T) {
	p := NewPerConsumer(10, 10) // a bucket refills in 1s
	clock := time.Unix(1_000_000, 0)
	p.now = func() time.Time { return clock }
	fill := func(prefix string, n int) {
		for i := range n {
			if err := p.Limit(lookupCall(fmt.Sprintf("%s%d", prefix, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill("a", sweepAt)
	clock = clock.Add(time.Second) // every bucket is full again
	fill("b", 1)                   // sweeps: only b0 is left
	if n := len(p.buckets); n != 1 {
		t.Fatalf("%d buckets after a sweep of full ones, want 1", n)
	}
	fill("c", sweepAt)
	clock = clock.Add(500 * time.Millisecond)
	fill("d", 1) // within the refill period of the last sweep: no walk
	if n := len(p.buckets); n != sweepAt+2 {
		t.Fatalf("%d buckets, want %d: a second sweep ran within the refill period", n, sweepAt+2)
	}
	clock = clock.Add(500 * time.Millisecond)
	fill("e", 1) // a refill period later every idle bucket is full: swept
	if n := len(p.buckets); n != 1 {
		t.Fatalf("%d buckets after the next sweep, want 1", n)
	}
}

// TestArrivalEndsOnceWhicheverEndsIt: a call the interceptor ends is
// uncounted once, and its stream's end later changes nothing; a call whose
// interceptor never runs (its request did not decode) is uncounted when its
// stream's context ends.
func TestArrivalEndsOnceWhicheverEndsIt(t *testing.T) {
	f := NewInFlight(4, 4, nil)
	arrive := f.Tap(func(string) bool { return false })
	interceptor := f.UnaryServerInterceptor()
	info := &tap.Info{FullMethodName: "/dedup.v1.DedupService/Claim"}

	stream, cancel := context.WithCancel(context.Background())
	ctx, err := arrive(stream, info)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.arrived.Load(); got != 1 {
		t.Fatalf("arrived = %d after Tap, want 1", got)
	}
	if _, err := interceptor(ctx, nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if got := f.arrived.Load(); got != 0 {
		t.Fatalf("arrived = %d after the interceptor, want 0", got)
	}
	cancel()
	if got := f.arrived.Load(); got != 0 {
		t.Fatalf("arrived = %d after the stream ended too, want 0", got)
	}

	stream, cancel = context.WithCancel(context.Background())
	if _, err := arrive(stream, info); err != nil {
		t.Fatal(err)
	}
	cancel() // the interceptor never ran
	for f.arrived.Load() != 0 {
		runtime.Gosched() // the stream's end runs its AfterFunc on a goroutine of its own
	}
}
