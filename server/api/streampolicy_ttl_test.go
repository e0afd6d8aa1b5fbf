package api

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestStreamTTLFollowsTheDurationRule: a stream policy's stream_ttl is a
// whole number of microseconds, not negative and within the ceiling, like
// every duration of the API; anything else is INVALID_FIELD naming
// policy.stream_ttl and stores nothing, where it used to be rounded down
// (1.000000001s stored as 1s, 1ns stored as unset: the 30-day default).
func TestStreamTTLFollowsTheDurationRule(t *testing.T) {
	_, admin := newStreamClients(t)
	ctx := context.Background()
	set := func(consumer string, ttl *durationpb.Duration) error {
		_, err := admin.SetStreamPolicy(ctx, &dedupv1.SetStreamPolicyRequest{Policy: &dedupv1.StreamPolicy{Consumer: consumer, StreamTtl: ttl}})
		return err
	}
	for name, ttl := range map[string]*durationpb.Duration{
		"a nanosecond past a second": {Seconds: 1, Nanos: 1},
		"one nanosecond":             {Nanos: 1},
		"999 nanoseconds":            {Nanos: 999},
		"negative":                   {Seconds: -1},
		"past the ceiling":           durationpb.New(MaxTTLCeiling + time.Second),
		"malformed":                  {Seconds: 1, Nanos: -1},
	} {
		t.Run(name, func(t *testing.T) {
			code, info, _ := streamErrorInfo(t, set("orders", ttl))
			if code != codes.InvalidArgument || info.GetReason() != "INVALID_FIELD" || info.GetMetadata()["field"] != "policy.stream_ttl" {
				t.Fatalf("stream_ttl %v: got %v %v, want INVALID_ARGUMENT / INVALID_FIELD naming policy.stream_ttl", ttl.AsDuration(), code, info)
			}
			if _, err := admin.GetStreamPolicy(ctx, &dedupv1.GetStreamPolicyRequest{Consumer: "orders"}); err == nil {
				t.Fatal("a refused policy was stored")
			}
		})
	}
	// Whole microseconds are kept as given.
	want := time.Second + time.Microsecond
	if err := set("kept", durationpb.New(want)); err != nil {
		t.Fatal(err)
	}
	got, err := admin.GetStreamPolicy(ctx, &dedupv1.GetStreamPolicyRequest{Consumer: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if d := got.GetPolicy().GetStreamTtl().AsDuration(); d != want {
		t.Fatalf("stream_ttl %s stored as %s", want, d)
	}
}
