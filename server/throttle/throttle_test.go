package throttle

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/consumer"
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
	if err := p.Limit(lookupCall("inventory")); !errors.Is(err, api.ErrRateLimited) {
		t.Fatalf("second call of a valid consumer: %v, want ErrRateLimited", err)
	}
}
