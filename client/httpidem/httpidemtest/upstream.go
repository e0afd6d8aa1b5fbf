// Package httpidemtest is the conformance suite of an Idempotency-Key
// front (the httpidem middleware, `dedupd gateway`), written from
// draft-ietf-httpapi-idempotency-key-header: each MUST and SHOULD the
// draft puts on a resource is a test, beside the behaviour docs/gateway.md
// promises. Run calls it against a front the caller builds around the
// suite's Upstream, a real HTTP handler that counts its calls: whatever
// the clients do, the upstream must see each key's request exactly once.
package httpidemtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Upstream is the API behind the front: an order service that counts
// every request it gets and what it saw of each.
//
//	POST /orders        201 with the next order number (X-Order-Id)
//	POST /status/CODE   answers CODE
//	POST /slow          waits for Release, then 201
//	POST /big/N         answers N bytes, streamed in 64 KiB pieces
//	anything else       200 "ok"
type Upstream struct {
	mu      sync.Mutex
	calls   int
	seen    []Seen
	release chan struct{}
	once    sync.Once
	entered chan struct{}
}

// Seen is what the upstream saw of one request.
type Seen struct {
	Method, Path, Key, FencingToken string
	Body                            string
}

// NewUpstream makes an Upstream.
func NewUpstream() *Upstream {
	return &Upstream{release: make(chan struct{}), entered: make(chan struct{}, 64)}
}

// Calls is how many requests the upstream got.
func (u *Upstream) Calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls
}

// Seen lists the requests the upstream got, in order.
func (u *Upstream) Seen() []Seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Seen(nil), u.seen...)
}

// Release lets every /slow request finish.
func (u *Upstream) Release() { u.once.Do(func() { close(u.release) }) }

// Entered receives once per /slow request that reached the upstream.
func (u *Upstream) Entered() <-chan struct{} { return u.entered }

func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.calls++
	n := u.calls
	u.seen = append(u.seen, Seen{Method: r.Method, Path: r.URL.Path, Key: r.Header.Get("Idempotency-Key"),
		FencingToken: r.Header.Get("Dedupd-Fencing-Token"), Body: string(body)})
	u.mu.Unlock()
	// A header the response carries, and a hop-by-hop one (named by
	// Connection) that no replay may carry.
	w.Header().Set("X-Upstream", "orders")
	w.Header().Set("Connection", "X-Hop")
	w.Header().Set("X-Hop", "1")
	switch {
	case r.URL.Path == "/orders":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Order-Id", strconv.Itoa(n))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":%d,"request":%q}`, n, body)
	case strings.HasPrefix(r.URL.Path, "/status/"):
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d, call %d", code, n)
	case r.URL.Path == "/slow":
		u.entered <- struct{}{}
		<-u.release
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "slow call %d", n)
	case strings.HasPrefix(r.URL.Path, "/big/"):
		size, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/big/"))
		w.Header().Set("Content-Type", "application/octet-stream")
		piece := []byte(strings.Repeat(strconv.Itoa(n%10), 64<<10))
		for size > 0 {
			k := min(size, len(piece))
			_, _ = w.Write(piece[:k])
			size -= k
		}
	default:
		fmt.Fprintf(w, "ok %d", n)
	}
}
