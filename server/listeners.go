package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/dedupd/dedupd/server/metrics"
)

// listeners are the addresses serve binds: gRPC always, the HTTP API and
// the metrics endpoint when asked for. They are bound together before the
// store opens, so that a port in use fails the start without leaving a new
// embedded store's directory behind.
type listeners struct {
	grpc, http, metrics net.Listener
}

// bindListeners binds every address of cfg, or none: on an error the ones
// already bound are closed. The gRPC and HTTP listeners carry the
// connection bounds (limitConnections); the metrics one, for operators
// only, does not.
func bindListeners(ctx context.Context, cfg Config, m *metrics.Metrics, log *slog.Logger) (listeners, error) {
	var ls listeners
	binds := []struct {
		addr, name string
		into       *net.Listener
		optional   bool // not bound when addr is empty
		bounded    bool
	}{
		{cfg.Listen, "--listen ", &ls.grpc, false, true},
		{cfg.HTTPListen, "--http-listen ", &ls.http, true, true},
		{cfg.MetricsListen, "--metrics-listen ", &ls.metrics, true, false},
	}
	for _, b := range binds {
		if b.optional && b.addr == "" {
			continue
		}
		lis, err := new(net.ListenConfig).Listen(ctx, "tcp", b.addr)
		if err != nil {
			ls.close()
			return listeners{}, fmt.Errorf("listening on %s%s: %w", b.name, b.addr, err)
		}
		if b.bounded {
			lis = limitConnections(lis, cfg, m, log)
		}
		*b.into = lis
	}
	return ls, nil
}

// close closes every bound listener; closing one a server has already
// closed is harmless.
func (ls listeners) close() {
	for _, lis := range []net.Listener{ls.grpc, ls.http, ls.metrics} {
		if lis != nil {
			_ = lis.Close()
		}
	}
}
