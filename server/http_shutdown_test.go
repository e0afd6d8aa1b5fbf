package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
)

// TestHTTPCallInFlightFinishesOnShutdown: an HTTP call whose request is
// still arriving when the server is told to stop gets its answer, and the
// claim it made is the one answered: the HTTP listener drains before the
// gRPC server stops (grpc-go's GracefulStop cancels calls that came
// through ServeHTTP). The call asks for 100 Continue, which the server
// sends once the handler reads the body: the call is in its handler. Its
// body is sent only once the HTTP listener refuses new connections, so
// shutdown is under way.
func TestHTTPCallInFlightFinishesOnShutdown(t *testing.T) {
	cfg := testConfig()
	cfg.DataDir, cfg.ReadyFile, cfg.HTTPListen = t.TempDir(), filepath.Join(t.TempDir(), "ready"), "127.0.0.1:0"
	cfg.ShutdownTimeout = time.Minute
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	ready := readReady(t, cfg.ReadyFile, ran)
	httpAddr := dedupdproc.ReadyValue(ready, "http")

	conn, err := net.Dial("tcp", httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"consumer":"shutdown","key":"in-flight"}`
	fmt.Fprintf(conn, "POST /dedup.v1.DedupService/Claim HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", httpAddr, len(body))
	_ = conn.SetReadDeadline(time.Now().Add(answerDeadline))
	answers := bufio.NewReader(conn)
	if line, err := answers.ReadString('\n'); err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q, %v; want 100 Continue", line, err)
	}
	if line, err := answers.ReadString('\n'); err != nil || line != "\r\n" {
		t.Fatalf("after 100 Continue: %q, %v", line, err)
	}
	stop()
	for { // shutdown has closed the HTTP listener
		c, err := net.DialTimeout("tcp", httpAddr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(answers, nil)
	if err != nil {
		t.Fatalf("no answer to the call in flight: %v", err)
	}
	defer resp.Body.Close()
	var claim struct{ Outcome, FencingToken string }
	if err := json.NewDecoder(resp.Body).Decode(&claim); err != nil || resp.StatusCode != http.StatusOK ||
		claim.Outcome != "OUTCOME_ACQUIRED" || claim.FencingToken != "1" {
		t.Fatalf("HTTP %d %+v (%v), want the claim acquired", resp.StatusCode, claim, err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
