package httpidem

import (
	"bytes"
	"maps"
	"net/http"
)

// capture is the ResponseWriter the handler of a first request writes to.
// It holds the response, up to limit body bytes, until the handler
// returns, so that it can be stored before the client sees it. A response
// that grows past the limit is sent on to the client from then on as it
// comes (streamed, never held whole), and is not stored.
type capture struct {
	w      http.ResponseWriter
	header http.Header
	status int
	body   bytes.Buffer
	limit  int64
	// passed: the response went to the client unstored; written counts its
	// body bytes.
	passed  bool
	written int64
}

func newCapture(w http.ResponseWriter, limit int64) *capture {
	return &capture{w: w, header: http.Header{}, limit: limit}
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	// 1xx responses are interim; the final status comes later.
	if c.status != 0 || status < 200 {
		return
	}
	c.status = status
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.passed {
		n, err := c.w.Write(p)
		c.written += int64(n)
		return n, err
	}
	if int64(c.body.Len()+len(p)) <= c.limit {
		return c.body.Write(p)
	}
	c.passThrough()
	return c.Write(p)
}

// passThrough sends what is held to the client and everything after it.
func (c *capture) passThrough() {
	maps.Copy(c.w.Header(), c.header)
	c.w.WriteHeader(c.status)
	c.passed = true
	n, _ := c.w.Write(c.body.Bytes())
	c.written = int64(n)
	c.body = bytes.Buffer{}
}

// Flush holds on while the response may still be stored; once it passes
// through, it flushes the client's connection (a streamed download).
func (c *capture) Flush() {
	if c.passed {
		_ = http.NewResponseController(c.w).Flush()
	}
}

// Unwrap lets http.ResponseController reach the client's writer.
func (c *capture) Unwrap() http.ResponseWriter { return c.w }

// finalStatus is the response's status (200 when the handler wrote
// nothing, as net/http would send).
func (c *capture) finalStatus() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}
