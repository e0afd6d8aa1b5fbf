package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestLeaseMetricsFollowTheClaimsInFlight: the sampled lease gauges count
// what was claimed and not finished, per consumer and kind, and the
// abandoned claim among them; finishing a claim takes it out.
func TestLeaseMetricsFollowTheClaimsInFlight(t *testing.T) {
	p := startDedupd(t, "--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0", "--lease-sample-interval", "20ms")
	addr := p.opsMetricsAddr(t)
	conn := p.dial(t)
	keys, streams := dedupv1.NewDedupServiceClient(conn), dedupv1.NewStreamServiceClient(conn)
	ctx := context.Background()
	held, err := keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "leases", Key: "held", LeaseTtl: durationpb.New(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "leases", Key: "abandoned", LeaseTtl: durationpb.New(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "leases", Stream: "order-1", Sequence: 1,
		LeaseTtl: durationpb.New(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	gauge := func(family, kind string) float64 {
		return opsValue(opsScrape(t, addr), family, map[string]string{"consumer": "leases", "kind": kind})
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		// Samples come every 20ms; the bound only keeps a broken sampler
		// from hanging the run.
		for range 3000 {
			if ok() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("never saw %s", what)
	}
	waitFor("2 key claims in flight, 1 of them lease-expired, and 1 stream claim", func() bool {
		return gauge("dedupd_claims_in_flight", "key") == 2 && gauge("dedupd_claims_lease_expired", "key") == 1 &&
			gauge("dedupd_claims_in_flight", "stream") == 1 && gauge("dedupd_claims_lease_expired", "stream") == 0
	})
	if idle := gauge("dedupd_oldest_claim_idle_seconds", "key"); idle <= 0 {
		t.Errorf("oldest idle claim = %vs, want above 0", idle)
	}
	if _, err := keys.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "leases", Key: "held",
		FencingToken: held.GetFencingToken(), Result: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	waitFor("1 key claim in flight after the Complete", func() bool {
		return gauge("dedupd_claims_in_flight", "key") == 1 && gauge("dedupd_claims_lease_expired", "key") == 1
	})
}
