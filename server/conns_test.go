package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// runServer runs Run with cfg until the test ends and returns its address.
// dialServer is a plaintext client of the server at addr, closed at the
// test's end.
func dialServer(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func runServer(t *testing.T, cfg Config) string {
	t.Helper()
	addr, _ := dedupdproc.ParseReadyFile(runServerReady(t, cfg))
	return addr
}

// runServerReady is runServer returning the whole ready file.
func runServerReady(t testing.TB, cfg Config) string {
	t.Helper()
	return runServerReadyLogging(t, cfg, slog.New(slog.DiscardHandler))
}

// runServerReadyLogging is runServerReady with log as the server's logger.
func runServerReadyLogging(t testing.TB, cfg Config, log *slog.Logger) string {
	t.Helper()
	if cfg.DataDir == "" || cfg.DataDir == testConfig().DataDir {
		cfg.DataDir = t.TempDir()
	}
	cfg.ReadyFile = filepath.Join(t.TempDir(), "ready")
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg, log) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	return readReady(t, cfg.ReadyFile, ran)
}

// silentConn connects from the loopback address src (Linux routes all of
// 127.0.0.0/8 to lo, so each is a peer of its own) and sends nothing, or,
// with preface, only the HTTP/2 client preface.
func silentConn(t *testing.T, src, addr string, preface bool) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if preface {
		if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// answerDeadline is how long a call in these tests may take. It is there
// so that a broken server fails the test instead of hanging it, not to
// judge speed: the tests judge by the answers.
const answerDeadline = time.Minute

// TestIdleConnectionsCannotLockOthersOut: 256 connections, as many as
// --max-connections, that send nothing or only the HTTP/2 preface, from
// four addresses; the handshake deadline is far off, so only the per-peer
// share stands between them and the slots. A fresh client with a token,
// and a health check, still get their answers.
func TestIdleConnectionsCannotLockOthersOut(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	cfg.HandshakeTimeout = time.Hour // the share alone must do
	addr := runServer(t, cfg)
	for i := range DefaultMaxConnections {
		silentConn(t, fmt.Sprintf("127.0.0.%d", 2+i%4), addr, i%2 == 1)
	}

	conn := dialServer(t, addr)
	ctx, cancel := context.WithTimeout(withToken(inventoryToken), answerDeadline)
	defer cancel()
	_, err := dedupv1.NewDedupServiceClient(conn).Lookup(ctx, &dedupv1.LookupRequest{Consumer: "inventory", Key: "k"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("Lookup while 256 idle connections are held: %v, want NOT_FOUND from the handler", err)
	}
	hc := dialServer(t, addr)
	resp, err := healthpb.NewHealthClient(hc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check while 256 idle connections are held: %v, %v; want SERVING", resp, err)
	}
}

// TestHandshakeDeadlineClosesSilentConnections: a connection that sends
// nothing, or only the preface, is closed by the server once the
// handshake deadline passes; grpc-go's own default would keep it 120 s.
func TestHandshakeDeadlineClosesSilentConnections(t *testing.T) {
	cfg := testConfig()
	cfg.HandshakeTimeout = time.Second
	addr := runServer(t, cfg)
	conns := map[bool]net.Conn{} // both wait out the deadline at once
	for _, preface := range []bool{false, true} {
		conns[preface] = silentConn(t, "127.0.0.1", addr, preface)
	}
	for preface, c := range conns {
		if err := c.SetReadDeadline(time.Now().Add(answerDeadline)); err != nil {
			t.Fatal(err)
		}
		// The server sends its SETTINGS, then closes.
		_, err := io.Copy(io.Discard, c)
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection (preface sent: %v) still open after %s: %v", preface, answerDeadline, err)
		}
	}
}

// TestIdleConnectionIsSentGoAway: a connection with no call for
// --max-connection-idle is sent GOAWAY, and the client goes IDLE (it would
// reconnect on its next call); without the idle timeout it stays READY.
func TestIdleConnectionIsSentGoAway(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConnectionIdle = time.Second
	addr := runServer(t, cfg)
	conn := dialServer(t, addr)
	// No deadline of its own (one failed once at a minute on a loaded
	// machine): a connection never sent GOAWAY hangs until go test's
	// -timeout, which names this test.
	ctx := t.Context()
	conn.Connect()
	for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
		if !conn.WaitForStateChange(ctx, s) {
			t.Fatalf("never connected: %v", s)
		}
	}
	if !conn.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("the test ended with the connection still READY")
	}
	if s := conn.GetState(); s != connectivity.Idle {
		t.Fatalf("after the idle timeout the client is %v, want IDLE (GOAWAY)", s)
	}
}
