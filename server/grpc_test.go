package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// TestPanicBecomesInternalAndServerKeepsServing: a service without a store
// panics on the first valid request; the caller must get INTERNAL with an
// ErrorInfo, and the server must go on answering.
func TestPanicBecomesInternalAndServerKeepsServing(t *testing.T) {
	cfg := Config{Limits: api.Limits{MaxLeaseTTL: time.Minute, MaxResultBytes: 1 << 10}}
	srv := newGRPCServer(cfg, slog.New(slog.DiscardHandler), health.NewServer(), guards{metrics: metrics.New()})
	var nilStore store.Store
	policies := api.NewPolicies(nilStore, api.Defaults{Policy: store.Policy{DefaultLeaseTTL: time.Second}, Limits: cfg.Limits}, 0)
	api.Register(srv, api.NewDedupService(nilStore, policies, slog.New(slog.DiscardHandler)))
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }() // returns once stopped
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := dedupv1.NewDedupServiceClient(conn)

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
	_, err = c.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "c"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("after two panics the server answered %v, want INVALID_ARGUMENT", err)
	}
}

// TestLoggedConsumerIsBounded: the consumer is logged before validation,
// so a name of a megabyte must not become a log line of a megabyte.
func TestLoggedConsumerIsBounded(t *testing.T) {
	cases := []struct {
		name, want string
	}{
		{"inventory", "inventory"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{strings.Repeat("b", 1<<20), strings.Repeat("b", 128) + "…"},
	}
	for _, tc := range cases {
		ctx := consumer.NewContext(context.Background(), &dedupv1.LookupRequest{Consumer: tc.name})
		fields := consumerField(ctx, interceptors.CallMeta{})
		if len(fields) != 2 || fields[0] != "consumer" || fields[1] != tc.want {
			t.Fatalf("consumer of %d bytes logged as %d bytes, want %d", len(tc.name), len(fmt.Sprint(fields...)), len(tc.want))
		}
	}
	if fields := consumerField(context.Background(), interceptors.CallMeta{}); fields != nil {
		t.Fatalf("a call without a consumer logged %v", fields)
	}
}
