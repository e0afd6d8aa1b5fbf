package connlimit

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// dialFrom connects to addr from the loopback address src (Linux routes all
// of 127.0.0.0/8 to lo, so each is a peer of its own).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c: a read sees the end.
// The read waits for the answer however long it takes; the deadline is only
// there so that a broken test ends.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := c.Read(make([]byte, 1))
	var op *net.OpError
	return errors.Is(err, io.EOF) || errors.As(err, &op) && !op.Timeout() // EOF or reset
}

// TestPerPeerCap: with a share of 2, a third connection from one address is
// closed at once while another address still gets in, and a closed
// connection gives its slot back.
func TestPerPeerCap(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan net.Addr, 10)
	l := PerPeer(raw, 2, func(a net.Addr) { refused <- a })
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := raw.Addr().String()
	dialFrom(t, "127.0.0.2", addr)
	dialFrom(t, "127.0.0.2", addr)
	first := <-accepted
	<-accepted
	over := dialFrom(t, "127.0.0.2", addr)
	if got := (<-refused).(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Fatalf("refused a connection from %s, want 127.0.0.2", got)
	}
	if !closedByServer(over) {
		t.Fatal("the connection over its address's share was not closed")
	}
	other := dialFrom(t, "127.0.0.3", addr)
	if c := <-accepted; c.RemoteAddr().String() != other.LocalAddr().String() {
		t.Fatalf("accepted %s, want the other address's %s", c.RemoteAddr(), other.LocalAddr())
	}
	if n := l.Open("127.0.0.2"); n != 2 {
		t.Fatalf("%d open from 127.0.0.2, want 2", n)
	}
	first.Close()
	first.Close() // a second Close gives back nothing more
	if n := l.Open("127.0.0.2"); n != 1 {
		t.Fatalf("%d open from 127.0.0.2 after one closed (twice), want 1", n)
	}
	again := dialFrom(t, "127.0.0.2", addr)
	if c := <-accepted; c.RemoteAddr().String() != again.LocalAddr().String() {
		t.Fatalf("accepted %s, want %s in the freed slot", c.RemoteAddr(), again.LocalAddr())
	}
}

// TestPeerOfAnAddress: IPv4 addresses count one by one, IPv6 ones by /64.
func TestPeerOfAnAddress(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7:443", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:443", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:80", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:80", "2001:db8:1:3::/64"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := peerIP(a); got != tc.want {
			t.Errorf("peer of %s = %s, want %s", tc.addr, got, tc.want)
		}
	}
	if got := peerIP(&net.UnixAddr{Name: "/run/d.sock", Net: "unix"}); got != "/run/d.sock" {
		t.Errorf("peer of a Unix socket = %s, want its name", got)
	}
}
