// Package connlimit caps the connections one peer address may hold open,
// so that the server's connection slots (--max-connections) cannot all be
// taken from one address: a connection over its address's share is closed
// as soon as it is accepted, before it costs a handshake.
package connlimit

import (
	"net"
	"sync"
)

// Listener accepts connections from l, at most perPeer of them open at once
// from one peer: one IPv4 address, or one IPv6 /64 (the least a site is
// given, so one site's 2^64 addresses count as one peer). A connection past that is closed at once and not
// returned; Accept waits for the next one.
type Listener struct {
	net.Listener
	perPeer  int
	onRefuse func(net.Addr)

	mu   sync.Mutex
	open map[string]int // IP -> connections open from it
}

// PerPeer wraps l. onRefuse, when not nil, is told of every connection
// closed for being over its address's share (for metrics and a log line).
func PerPeer(l net.Listener, perPeer int, onRefuse func(net.Addr)) *Listener {
	return &Listener{Listener: l, perPeer: perPeer, onRefuse: onRefuse, open: map[string]int{}}
}

// Accept returns the next connection whose address is within its share.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := peerIP(c.RemoteAddr())
		if l.take(peer) {
			return &conn{Conn: c, release: func() { l.give(peer) }}, nil
		}
		c.Close()
		if l.onRefuse != nil {
			l.onRefuse(c.RemoteAddr())
		}
	}
}

// Open is the number of connections open from ip now.
func (l *Listener) Open(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[ip]
}

func (l *Listener) take(peer string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[peer] >= l.perPeer {
		return false
	}
	l.open[peer]++
	return true
}

func (l *Listener) give(peer string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[peer]--; l.open[peer] <= 0 {
		delete(l.open, peer) // an address with nothing open costs nothing
	}
}

// peerIP names the peer an address counts for: its IPv4 address, or its
// IPv6 /64; an address that is not host:port (a Unix socket) counts whole.
func peerIP(a net.Addr) string {
	var ip net.IP
	if tcp, ok := a.(*net.TCPAddr); ok {
		ip = tcp.IP
	} else if host, _, err := net.SplitHostPort(a.String()); err == nil {
		ip = net.ParseIP(host)
	}
	switch {
	case ip == nil:
		return a.String()
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// conn gives its slot back on its first Close.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
