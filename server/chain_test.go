package server

import (
	"testing"

	"google.golang.org/grpc"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestStreamingCallsAreAdminOnly holds up the reason newGRPCServer gives
// for its shorter streaming chain: no consumer-facing service has a
// streaming call, so none needs the consumer interceptor, domain metrics
// or the rate limit there.
func TestStreamingCallsAreAdminOnly(t *testing.T) {
	consumerFacing := []grpc.ServiceDesc{
		dedupv1.DedupService_ServiceDesc,
		dedupv1.StreamService_ServiceDesc,
	}
	for _, desc := range consumerFacing {
		for _, s := range desc.Streams {
			t.Errorf("%s/%s streams: the streaming interceptor chain lacks the consumer, domain-metrics and rate-limit interceptors it needs (server/grpc.go)",
				desc.ServiceName, s.StreamName)
		}
	}
}
