package grpctest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// StallingCaller is a gRPC client that sends calls and never reads: it
// speaks raw HTTP/2, never sends WINDOW_UPDATE and never reads its socket,
// so the server's replies back up in the server. It is how a caller pins a
// reply in server memory.
type StallingCaller struct {
	t      testing.TB
	addr   string
	conn   net.Conn
	w      *bufio.Writer
	fr     *http2.Framer
	block  bytes.Buffer
	enc    *hpack.Encoder
	nextID uint32
}

// DialStalling opens a connection to addr and sends the HTTP/2 preface and
// SETTINGS; the connection closes when the test ends or on Close.
func DialStalling(t testing.TB, addr string) *StallingCaller {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &StallingCaller{t: t, addr: addr, conn: conn, w: bufio.NewWriter(conn), nextID: 1}
	t.Cleanup(c.Close)
	c.fr = http2.NewFramer(c.w, nil)
	c.enc = hpack.NewEncoder(&c.block)
	_, err = c.w.WriteString(http2.ClientPreface)
	c.must(err)
	c.must(c.fr.WriteSettings())
	c.must(c.w.Flush())
	return c
}

// Send sends n calls of method ("/pkg.Service/Method") with the encoded
// request message on new streams, and flushes them.
func (c *StallingCaller) Send(method string, request []byte, n int) {
	c.t.Helper()
	body := make([]byte, 5+len(request)) // the gRPC frame: uncompressed, length, message
	binary.BigEndian.PutUint32(body[1:5], uint32(len(request)))
	copy(body[5:], request)
	for range n {
		c.block.Reset()
		for _, f := range [][2]string{
			{":method", "POST"}, {":scheme", "http"}, {":authority", c.addr},
			{":path", method}, {"content-type", "application/grpc"}, {"te", "trailers"},
		} {
			c.must(c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
		}
		id := c.nextID
		c.nextID += 2
		c.must(c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block.Bytes(), EndHeaders: true}))
		c.must(c.fr.WriteData(id, true, body))
	}
	c.must(c.w.Flush())
}

// Close closes the connection: the caller leaves.
func (c *StallingCaller) Close() { _ = c.conn.Close() }

func (c *StallingCaller) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}
