package replybudget

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// connReplies are the reservations of one connection's replies not yet
// written. grpc-go does not free the buffers of replies still queued when
// a connection closes (it leaves them to the garbage collector), so the
// connection's end gives their bytes back.
type connReplies struct {
	held        int64     // bytes of its replies in the budget; Budget.mu guards it
	lastWritten time.Time // when a reply of it was last written out; Budget.mu guards it

	mu      sync.Mutex
	replies map[*reservation]struct{}
	closed  bool
}

// add records r, or gives it back at once when the connection has ended.
func (c *connReplies) add(r *reservation) {
	c.mu.Lock()
	if !c.closed {
		c.replies[r] = struct{}{}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	r.release()
}

func (c *connReplies) forget(r *reservation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.replies, r)
}

func (c *connReplies) end() {
	c.mu.Lock()
	c.closed = true
	held := make([]*reservation, 0, len(c.replies))
	for r := range c.replies {
		held = append(held, r)
	}
	c.mu.Unlock()
	for _, r := range held {
		r.release()
	}
}

// connOf is the connection a call came on, if Credentials wrapped it.
func connOf(ctx context.Context) *connReplies {
	if p, ok := peer.FromContext(ctx); ok {
		if a, ok := p.Addr.(*connAddr); ok {
			return a.replies
		}
	}
	return nil
}

// Credentials wraps a server's transport credentials (nil: plaintext) so
// that the budget knows each connection: its calls find it (connOf) and its
// close gives back the bytes of the replies it still holds. Install it with
// grpc.Creds on the server the interceptor runs on.
//
// A stats.Handler would learn of connections too, but grpc-go then builds
// an event for every call and copies its metadata for it: about 18
// allocations a call, a fifth of a call's, for the two connection events
// the budget needs.
func Credentials(inner credentials.TransportCredentials) credentials.TransportCredentials {
	return connCredentials{inner: inner}
}

// connCredentials is Credentials: inner's handshake (none for plaintext),
// then the connection wrapped in a trackedConn. Peers see what they saw
// before: inner's AuthInfo (nil for plaintext), and the same address.
type connCredentials struct {
	inner credentials.TransportCredentials
}

func (c connCredentials) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info := raw, credentials.AuthInfo(nil)
	if c.inner != nil {
		var err error
		if conn, info, err = c.inner.ServerHandshake(raw); err != nil {
			return nil, nil, err
		}
	}
	return newTrackedConn(conn), info, nil
}

func (c connCredentials) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if c.inner == nil {
		return raw, nil, nil
	}
	return c.inner.ClientHandshake(ctx, authority, raw)
}

func (c connCredentials) Info() credentials.ProtocolInfo {
	if c.inner == nil {
		return credentials.ProtocolInfo{}
	}
	return c.inner.Info()
}

func (c connCredentials) Clone() credentials.TransportCredentials {
	if c.inner == nil {
		return c
	}
	return connCredentials{inner: c.inner.Clone()}
}

// OverrideServerName is deprecated in grpc-go, but still part of the
// interface.
func (c connCredentials) OverrideServerName(name string) error {
	if c.inner == nil {
		return nil
	}
	return c.inner.OverrideServerName(name) //nolint:staticcheck // deprecated, still part of the interface
}

// trackedConn is a server connection with its replies: RemoteAddr carries
// them to the connection's calls (peer.Addr), and Close ends them.
type trackedConn struct {
	net.Conn
	addr  *connAddr
	close sync.Once
}

func newTrackedConn(conn net.Conn) *trackedConn {
	return &trackedConn{Conn: conn, addr: &connAddr{addr: conn.RemoteAddr(), replies: &connReplies{replies: map[*reservation]struct{}{}}}}
}

func (c *trackedConn) RemoteAddr() net.Addr { return c.addr }

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.close.Do(c.addr.replies.end)
	return err
}

// connAddr is the peer's address, as it was (String, Network), with the
// connection's replies.
type connAddr struct {
	addr    net.Addr // nil when the connection knows none
	replies *connReplies
}

func (a *connAddr) Network() string {
	if a.addr == nil {
		return ""
	}
	return a.addr.Network()
}

func (a *connAddr) String() string {
	if a.addr == nil {
		return ""
	}
	return a.addr.String()
}
