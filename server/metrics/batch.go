package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/rpcmethod"
)

// newBatchItems is the histogram of batch sizes, by method.
func newBatchItems() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dedupd_batch_items",
		Help:    "Items per batch call (ClaimBatch, FinishBatch, ExtendLeaseBatch, LookupBatch), by method.",
		Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
	}, []string{"method"})
}

// observeBatch counts each item of a batch reply as its lone call would be
// counted: claim outcomes, and the errors the domain metrics count.
func (m *Metrics) observeBatch(ctx context.Context, method string, req, resp any) {
	if rpc, ok := rpcmethod.Of(method); ok && rpc.Batch() {
		if r, ok := req.(proto.Message); ok {
			m.batchItems.WithLabelValues(rpc.Op).Observe(float64(rpc.ItemCount(r)))
		}
	}
	var errs []*spb.Status
	switch r := resp.(type) {
	case *dedupv1.ClaimBatchResponse:
		for _, res := range r.GetResults() {
			if c := res.GetClaim(); c != nil {
				m.observeClaim(ctx, c)
			} else {
				errs = append(errs, res.GetError())
			}
		}
	case *dedupv1.FinishBatchResponse:
		errs = recordErrors(r.GetResults())
	case *dedupv1.ExtendLeaseBatchResponse:
		errs = recordErrors(r.GetResults())
	case *dedupv1.LookupBatchResponse:
		errs = recordErrors(r.GetResults())
	}
	for _, e := range errs {
		m.observeReason(ctx, method, statusReason(e))
	}
}

func recordErrors(results []*dedupv1.RecordResult) []*spb.Status {
	var errs []*spb.Status
	for _, r := range results {
		if e := r.GetError(); e != nil {
			errs = append(errs, e)
		}
	}
	return errs
}

func statusReason(s *spb.Status) string {
	return rpcerrors.Info(status.FromProto(s)).GetReason()
}
