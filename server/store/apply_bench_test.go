package store_test

import (
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// BenchmarkApplyFinish measures the state machine on the writes that follow
// a claim (BenchmarkApplyClaim covers claims): every store calls Apply once
// per write, so this is the floor of a call's CPU cost.
//
//	go test -run '^$' -bench Apply ./server/store/
func BenchmarkApplyFinish(b *testing.B) {
	policy := store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	now := time.Now()
	pending, err := store.Apply(nil, store.ClaimParams{Consumer: "orders", Key: "order-12345",
		Digest: []byte("0123456789abcdef0123456789abcdef"), Owner: "worker-1", Policy: policy}, now)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		cmd  store.Command
	}{
		{"Complete", store.CompleteParams{Consumer: "orders", Key: "order-12345", FencingToken: 1,
			Result: []byte(`{"status":"ok"}`), Policy: policy}},
		{"Reject", store.RejectParams{Consumer: "orders", Key: "order-12345", FencingToken: 1,
			Rejection: store.Rejection{Reason: "OUT_OF_STOCK"}, Policy: policy}},
		{"ExtendLease", store.ExtendLeaseParams{Consumer: "orders", Key: "order-12345", FencingToken: 1,
			LeaseTTL: time.Minute, Policy: policy}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := store.Apply(&pending.Record, bc.cmd, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
