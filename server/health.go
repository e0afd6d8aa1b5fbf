package server

import (
	"context"
	"sync"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// healthServices are the names whose status the watcher sets: the server
// as a whole ("") and each service it serves.
var healthServices = []string{
	"",
	dedupv1.DedupService_ServiceDesc.ServiceName,
	dedupv1.AdminService_ServiceDesc.ServiceName,
	dedupv1.StreamService_ServiceDesc.ServiceName,
	dedupv1.StreamAdminService_ServiceDesc.ServiceName,
}

// healthService is grpc-go's health server, whose Watch streams end at
// shutdown. Left to itself a Watch stream stays open for as long as its
// client keeps it, so one open Watch would make every graceful shutdown
// wait the whole --shutdown-timeout, and anyone could hold them open.
type healthService struct {
	*health.Server
	ending  chan struct{}
	endOnce sync.Once
}

func newHealthService() *healthService {
	return &healthService{Server: health.NewServer(), ending: make(chan struct{})}
}

// shutdown sets every service NOT_SERVING, for good, then ends every Watch
// stream, open or still to come, once its client has been told
// NOT_SERVING.
func (h *healthService) shutdown() {
	h.Shutdown()
	h.endOnce.Do(func() { close(h.ending) })
}

// Watch is the health server's Watch until shutdown; then the stream's
// last message is NOT_SERVING, and it ends with OK, so that a client (a
// load balancer) reads the end as "this server is gone" rather than as an
// error to retry at once.
func (h *healthService) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.ending:
			cancel()
		case <-ctx.Done():
		}
	}()
	watched := &watchStream{Health_WatchServer: stream, ctx: ctx}
	err := h.Server.Watch(req, watched)
	select {
	case <-h.ending:
	default:
		return err // the client went away
	}
	if watched.last != healthpb.HealthCheckResponse_NOT_SERVING {
		return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
	}
	return nil
}

// watchStream is a Watch stream whose context ends at shutdown, and which
// remembers the last status sent on it. Only the one Watch goroutine uses
// it, so last needs no lock.
type watchStream struct {
	healthpb.Health_WatchServer
	ctx  context.Context
	last healthpb.HealthCheckResponse_ServingStatus
}

func (w *watchStream) Context() context.Context { return w.ctx }

func (w *watchStream) Send(m *healthpb.HealthCheckResponse) error {
	w.last = m.GetStatus()
	return w.Health_WatchServer.Send(m)
}
