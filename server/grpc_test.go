package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// TestPanicBecomesInternalAndServerKeepsServing: a service without a store
// panics on the first valid request; the caller must get INTERNAL with an
// ErrorInfo, and the server must go on answering.
func TestPanicBecomesInternalAndServerKeepsServing(t *testing.T) {
	cfg := Config{Limits: policy.Limits{MaxLeaseTTL: time.Minute, MaxResultBytes: 1 << 10}}
	srv := newGRPCServer(cfg, slog.New(slog.DiscardHandler), health.NewServer(), guards{metrics: metrics.New()})
	var nilStore store.Store
	policies := policy.NewKeys(nilStore, policy.Defaults{Policy: store.Policy{DefaultLeaseTTL: time.Second}, Limits: cfg.Limits}, 0)
	api.Register(srv, api.NewDedupService(nilStore, policies, slog.New(slog.DiscardHandler)))
	c := dedupv1.NewDedupServiceClient(grpctest.ServeInMemory(t, srv))

	for range 2 {
		_, err := c.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "c", Key: "k"})
		st := status.Convert(err)
		if st.Code() != codes.Internal || st.Message() != "internal error" {
			t.Fatalf("panicking handler answered %v, want INTERNAL without the cause", err)
		}
		var info *errdetails.ErrorInfo
		for _, d := range st.Details() {
			if i, ok := d.(*errdetails.ErrorInfo); ok {
				info = i
			}
		}
		if info.GetReason() != rpcerrors.ReasonInternal {
			t.Fatalf("ErrorInfo = %v, want reason %s", info, rpcerrors.ReasonInternal)
		}
	}
	// Validation still runs before the store, so the server is alive.
	_, err := c.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "c"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("after two panics the server answered %v, want INVALID_ARGUMENT", err)
	}
}
