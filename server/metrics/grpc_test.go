package metrics

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Calls are counted under the labels go-grpc-middleware's provider used:
// started, received, sent only on success, handled by code, and timed.
func TestGRPCMetricsCountCalls(t *testing.T) {
	g := newGRPCMetrics()
	info := &grpc.UnaryServerInfo{FullMethod: "/dedup.v1.DedupService/Claim"}
	for _, err := range []error{nil, nil, status.Error(codes.Unavailable, "down")} {
		_, _ = g.UnaryServerInterceptor()(context.Background(), nil, info, func(context.Context, any) (any, error) {
			return nil, err
		})
	}
	labels := []string{"unary", "dedup.v1.DedupService", "Claim"}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"started", testutil.ToFloat64(g.started.WithLabelValues(labels...)), 3},
		{"received", testutil.ToFloat64(g.received.WithLabelValues(labels...)), 3},
		{"sent", testutil.ToFloat64(g.sent.WithLabelValues(labels...)), 2},
		{"handled OK", testutil.ToFloat64(g.handled.WithLabelValues(append(labels, "OK")...)), 2},
		{"handled Unavailable", testutil.ToFloat64(g.handled.WithLabelValues(append(labels, "Unavailable")...)), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(g.seconds); n != 1 {
		t.Errorf("%d handling-time series, want 1", n)
	}
}
