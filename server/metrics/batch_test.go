package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// A batch reply is counted item by item, as its lone calls would be, and
// its size goes into the histogram.
func TestBatchCountsEachItem(t *testing.T) {
	m := New()
	req := &dedupv1.ClaimBatchRequest{Consumer: "orders", Items: make([]*dedupv1.ClaimBatchItem, 4)}
	itemErr := func(st *status.Status) *dedupv1.ClaimBatchResult {
		return &dedupv1.ClaimBatchResult{Result: &dedupv1.ClaimBatchResult_Error{Error: st.Proto()}}
	}
	claim := func(o dedupv1.Outcome) *dedupv1.ClaimBatchResult {
		return &dedupv1.ClaimBatchResult{Result: &dedupv1.ClaimBatchResult_Claim{Claim: &dedupv1.ClaimResponse{Outcome: o}}}
	}
	resp := &dedupv1.ClaimBatchResponse{Results: []*dedupv1.ClaimBatchResult{
		claim(dedupv1.Outcome_OUTCOME_ACQUIRED), claim(dedupv1.Outcome_OUTCOME_ACQUIRED),
		// What server/api answers a store's digest conflict with; the
		// interceptor reads the wire, not the store's error.
		itemErr(rpcerrors.New(codes.FailedPrecondition, rpcerrors.ReasonDigestMismatch, "digest differs", rpcerrors.Metadata("orders", "k"))),
		itemErr(rpcerrors.Status(&rpcerrors.RetryAfterError{Err: rpcerrors.ErrRateLimited}, "orders", "k")),
	}}
	handler := func(context.Context, any) (any, error) { return resp, nil }
	ctx := consumer.NewContext(context.Background(), req)
	info := &grpc.UnaryServerInfo{FullMethod: "/dedup.v1.DedupService/ClaimBatch"}
	if _, err := m.UnaryServerInterceptor()(ctx, req, info, handler); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ got, want float64 }{
		"acquired":         {testutil.ToFloat64(m.claims.WithLabelValues("orders", "acquired")), 2},
		"digest conflicts": {testutil.ToFloat64(m.digestConflicts.WithLabelValues("orders")), 1},
		"rate limited":     {testutil.ToFloat64(m.refused.WithLabelValues(rpcerrors.ReasonRateLimited)), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.batchItems); n != 1 {
		t.Fatalf("batch-size histogram has %d series, want 1", n)
	}
	if err := testutil.CollectAndCompare(m.batchItems, strings.NewReader(`
# HELP dedupd_batch_items Items per batch call (ClaimBatch, FinishBatch, ExtendLeaseBatch, LookupBatch), by method.
# TYPE dedupd_batch_items histogram
dedupd_batch_items_bucket{method="ClaimBatch",le="1"} 0
dedupd_batch_items_bucket{method="ClaimBatch",le="2"} 0
dedupd_batch_items_bucket{method="ClaimBatch",le="5"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="10"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="20"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="50"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="100"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="200"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="500"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="1000"} 1
dedupd_batch_items_bucket{method="ClaimBatch",le="+Inf"} 1
dedupd_batch_items_sum{method="ClaimBatch"} 4
dedupd_batch_items_count{method="ClaimBatch"} 1
`)); err != nil {
		t.Error(err)
	}
}

// batchFailingStore answers every batch item with its error.
type batchFailingStore struct {
	store.Backend
	errs []error
}

func (f batchFailingStore) ApplyBatch(context.Context, store.BatchParams) []store.ItemResult {
	results := make([]store.ItemResult, len(f.errs))
	for i, err := range f.errs {
		results[i].Err = err
	}
	return results
}

// The observed store counts each failed batch item under its command's
// operation; refusals are answers, not failures.
func TestObservedStoreCountsBatchItems(t *testing.T) {
	m := New()
	s := m.ObserveStore(storetest.AsEngine(batchFailingStore{errs: []error{nil, store.ErrUnavailable, store.ErrLeaseLost, context.DeadlineExceeded}}))
	s.ApplyBatch(context.Background(), store.BatchParams{Commands: []store.Command{
		store.ClaimParams{}, store.ClaimParams{}, store.CompleteParams{}, store.ExtendLeaseParams{}}})
	for _, c := range []struct {
		op, class string
		want      float64
	}{{"claim", "unavailable", 1}, {"complete", "unavailable", 0}, {"extend_lease", "deadline", 1}} {
		if got := testutil.ToFloat64(m.storeErrors.WithLabelValues(c.op, c.class)); got != c.want {
			t.Errorf("store errors {%s, %s} = %v, want %v", c.op, c.class, got, c.want)
		}
	}
}
