package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// tcpProxy forwards a local port to the database, and can cut every
// connection and refuse new ones, so a test can take the database away
// from dedupd without stopping the shared PostgreSQL server.
type tcpProxy struct {
	target string
	addr   string

	mu    sync.Mutex
	lis   net.Listener
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	p := &tcpProxy{target: target}
	p.listen(t, "127.0.0.1:0")
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) listen(t *testing.T, addr string) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.lis, p.addr = lis, lis.Addr().String()
	p.mu.Unlock()
	go p.accept(lis)
}

func (p *tcpProxy) accept(lis net.Listener) {
	for {
		client, err := lis.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); server.Close() }()
		go func() { _, _ = io.Copy(client, server); client.Close() }()
	}
}

// cut closes the listener and every forwarded connection.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lis.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestDatabaseOutageIsUnavailable: while the database is out of reach,
// calls fail fast with UNAVAILABLE / STORE_UNAVAILABLE, never INTERNAL or a
// hang; when it is back, the same server answers again without a restart.
func TestDatabaseOutageIsUnavailable(t *testing.T) {
	direct := pgtest.URL(t)
	if out, err := runDedupd(t, "migrate", "--database-url", direct); err != nil {
		t.Fatalf("dedupd migrate: %v\n%s", err, out)
	}
	u, err := url.Parse(direct)
	if err != nil || u.Host == "" {
		t.Fatalf("this test reroutes a postgres:// URL through a proxy; got %q (%v)", direct, err)
	}
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr
	srv := startDedupd(t, "--database-url", u.String())
	c := dedupv1.NewDedupServiceClient(srv.dial(t))
	claim(t, c, "before", nil, 0)

	proxy.cut()
	for _, key := range []string{"during-1", "during-2"} {
		// A fast failure shows in the answer: UNAVAILABLE from the server,
		// not DEADLINE_EXCEEDED from a caller that gave up waiting. The
		// deadline is far, so a slow machine cannot fail this.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key})
		cancel()
		wantError(t, err, codes.Unavailable, "STORE_UNAVAILABLE")
		// The caller learns nothing of the database: not its user, name
		// or address, which pgx's connect error names.
		if msg := status.Convert(err).Message(); msg != "store unavailable; retry" {
			t.Errorf("Claim during the outage said %q, want the fixed message", msg)
		}
	}

	proxy.listen(t, proxy.addr)
	// Recovery is judged by the answer; the bound only ends a test whose
	// server never recovers (pgx reconnects on the next call).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := c.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: consumer, Key: "after"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dedupd did not recover after the database's return: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.stop(t)
	// The cause is the operator's: logged at WARN.
	if !strings.Contains(srv.Logs.String(), `"level":"WARN","msg":"store unavailable"`) {
		t.Errorf("no WARN line with the cause of STORE_UNAVAILABLE; logs:\n%s", srv.Logs)
	}
}
