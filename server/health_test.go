package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
)

// TestShutdownEndsHealthWatches: a health Watch open at shutdown is told
// NOT_SERVING and then its stream ends with OK, so the server stops
// without waiting for --shutdown-timeout. The oracle is the stream itself:
// left to grpc-go, the Watch stays open until the timeout cuts it, and the
// client then sees an error instead of the stream's end (and the log says
// the timeout passed).
func TestShutdownEndsHealthWatches(t *testing.T) {
	logs := &dedupdproc.LogBuffer{}
	cfg := testConfig()
	cfg.DataDir = t.TempDir()
	cfg.ReadyFile = filepath.Join(t.TempDir(), "ready")
	cfg.ShutdownTimeout = 20 * time.Second // only reached when Watch streams are not ended
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil))) }()
	addr := waitReady(t, cfg.ReadyFile, ran)

	conn := dialServer(t, addr)
	var watches []grpc.ServerStreamingClient[healthpb.HealthCheckResponse]
	for _, service := range []string{"", "dedup.v1.DedupService", "no.such.Service"} {
		w, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatal(err)
		}
		first, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if service != "no.such.Service" && first.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Watch(%q) began with %v, want SERVING", service, first.GetStatus())
		}
		watches = append(watches, w)
	}

	stop()
	for i, w := range watches {
		var last healthpb.HealthCheckResponse_ServingStatus = -1
		for {
			resp, err := w.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Watch %d ended with %v, want NOT_SERVING and then the stream's end", i, err)
			}
			last = resp.GetStatus()
		}
		if last != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("Watch %d's last status = %v, want NOT_SERVING", i, last)
		}
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "shutdown timeout passed") {
		t.Fatalf("shutdown waited for the timeout:\n%s", logs)
	}
}

// waitReady waits for Run's ready file and returns the address in it.
func waitReady(t *testing.T, path string, ran <-chan error) string {
	t.Helper()
	addr, _ := dedupdproc.ParseReadyFile(readReady(t, path, ran))
	return addr
}

// readReady waits for the ready file at path and returns what it holds.
func readReady(t testing.TB, path string, ran <-chan error) string {
	t.Helper()
	for {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		select {
		case err := <-ran:
			t.Fatalf("Run returned before serving: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
