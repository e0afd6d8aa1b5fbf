package server

import (
	"cmp"
	"log/slog"
	"net"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/connlimit"
	"github.com/dedupd/dedupd/server/loglimit"
	"github.com/dedupd/dedupd/server/metrics"
)

// Defaults of the connection guards (docs/operations.md, "Connections").
const (
	// DefaultHandshakeTimeout is how long a new connection has to finish
	// its TLS handshake and send the HTTP/2 preface and SETTINGS: a
	// connection that sends nothing holds a slot no longer than that.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultMaxConnectionIdle is how long a connection may stay open with
	// no call on it before the server sends GOAWAY.
	DefaultMaxConnectionIdle = 2 * time.Minute
	// DefaultMaxConnectionsPerPeer is the share of --max-connections one
	// address (one IPv6 /64) may hold: an eighth of the default 256, so it
	// takes eight addresses to fill the slots.
	DefaultMaxConnectionsPerPeer = 32
)

// The server pings a connection that has been silent for keepaliveTime,
// and closes it when the ping is not answered within keepaliveTimeout, so
// that a peer that vanished (no FIN, no RST) gives its slot back. A client
// may ping as often as every keepaliveMinTime, calls open or not; more
// often, and it is sent GOAWAY (too_many_pings), as grpc-go does.
const (
	keepaliveTime    = time.Minute
	keepaliveTimeout = 20 * time.Second
	keepaliveMinTime = 10 * time.Second
)

// connectionOptions are the handshake deadline, keepalive and idle timeout.
// Pings do not count as use: a connection with no call is closed after
// MaxConnectionIdle however often its client pings.
func connectionOptions(cfg Config) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ConnectionTimeout(cmp.Or(cfg.HandshakeTimeout, DefaultHandshakeTimeout)),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: cmp.Or(cfg.MaxConnectionIdle, DefaultMaxConnectionIdle),
			Time:              keepaliveTime,
			Timeout:           keepaliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
	}
}

// limitConnections bounds the connections lis hands to the server: at
// most MaxConnections at once (one more waits in the kernel's backlog until
// one closes), and at most MaxConnectionsPerPeer of them from one address
// (one more is closed as soon as it is accepted). A per-peer share at or
// above the global bound is no share at all and adds nothing.
func limitConnections(lis net.Listener, cfg Config, m *metrics.Metrics, log *slog.Logger) net.Listener {
	total := cmp.Or(cfg.MaxConnections, DefaultMaxConnections)
	lis = netutil.LimitListener(lis, total)
	perPeer := cmp.Or(cfg.MaxConnectionsPerPeer, DefaultMaxConnectionsPerPeer)
	if perPeer >= total {
		return lis
	}
	lines := loglimit.New(refusedConnLinesPerSecond, refusedConnLinesBurst)
	return connlimit.PerPeer(lis, perPeer, func(peer net.Addr) {
		m.ConnectionRefused()
		if ok, dropped := lines.Allow(refusedConnLine); ok {
			log.Warn("connection refused: its address holds its share of --max-connections",
				"peer", clip.String(peer.String(), 64), "share", perPeer, "lines_dropped", dropped)
		}
	})
}

var refusedConnLine = loglimit.Key{What: "connection over its peer's share"}

// A refused connection is logged at most this many times at once, then this
// many a second: an attacker reconnecting in a loop must not fill the log.
const (
	refusedConnLinesBurst     = 10
	refusedConnLinesPerSecond = 1
)
