package main

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
)

// The ready file appears only once the server answers: the moment it
// exists, its address takes a health check; it disappears on a clean stop.
func TestReadyFileNamesAServingAddress(t *testing.T) {
	p := startDedupd(t, "--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0")
	host, port, err := net.SplitHostPort(p.Addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("ready address %q is not the bound loopback address (%v)", p.Addr, err)
	}
	conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// No WaitForReady: the first attempt must find the server serving.
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check at the ready address: %v, %v", resp, err)
	}
	if p.MetricsAddr == "" || p.MetricsAddr == p.Addr {
		t.Fatalf("ready file metrics address %q", p.MetricsAddr)
	}
}

func TestReadyFileRemovedOnStop(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(dedupdBin, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--ready-file", ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{&dedupdproc.Process{Cmd: cmd, Logs: &dedupdproc.LogBuffer{}, Exited: make(chan struct{})}}
	cmd.Stderr = p.Logs
	go func() { p.WaitErr = cmd.Wait(); close(p.Exited) }()
	opsEventually(t, "the ready file", func() bool { _, err := os.Stat(ready); return err == nil })
	content, err := os.ReadFile(ready)
	if err != nil {
		t.Fatal(err)
	}
	if addr, _ := dedupdproc.ParseReadyFile(string(content)); !strings.HasPrefix(addr, "127.0.0.1:") || strings.Count(string(content), "\n") != 1 {
		t.Fatalf("ready file %q: want one line with the bound address", content)
	}
	p.stop(t)
	if _, err := os.Stat(ready); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ready file after a clean stop: %v, want it removed", err)
	}
}

// A server that fails to start writes no ready file.
func TestReadyFileNotWrittenWhenStartupFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct{ name, listen, httpListen string }{
		{"address in use", taken.Addr().String(), ""},
		{"refused configuration", "0.0.0.0:0", ""}, // no auth off loopback
		{"HTTP address in use", "127.0.0.1:0", taken.Addr().String()},
		{"refused HTTP configuration", "127.0.0.1:0", "0.0.0.0:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := filepath.Join(t.TempDir(), "ready")
			out, err := runDedupd(t, "serve", "--listen", tc.listen, "--http-listen", tc.httpListen,
				"--data-dir", t.TempDir(), "--ready-file", ready)
			if err == nil {
				t.Fatalf("dedupd serve on %s succeeded; output:\n%s", tc.listen, out)
			}
			if _, err := os.Stat(ready); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("ready file after a failed start: %v, want none; output:\n%s", err, out)
			}
			if entries, _ := os.ReadDir(filepath.Dir(ready)); len(entries) != 0 {
				t.Fatalf("failed start left %v beside the ready file", entries)
			}
		})
	}
}
