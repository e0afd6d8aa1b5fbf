package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client/httpidem/httpidemtest"
	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
)

var gatewayConsumers atomic.Int64

// startGateway runs `dedupd gateway` in front of upstream against the
// dedupd at server, and returns its base URL once it serves.
func startGateway(t *testing.T, server string, upstream http.Handler, args ...string) string {
	t.Helper()
	return startGatewayEnv(t, nil, upstream, append([]string{"--server", server}, args...)...).url
}

// gatewayProcess is a running `dedupd gateway`.
type gatewayProcess struct {
	url  string
	logs *dedupdproc.LogBuffer
}

// startGatewayEnv is startGateway with the environment variables env
// (KEY=value) added to a copy of this process's environment without the
// ones that name dedupd's address; the address is up to env and args.
func startGatewayEnv(t *testing.T, env []string, upstream http.Handler, args ...string) gatewayProcess {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	ready := filepath.Join(t.TempDir(), "ready")
	args = append([]string{"gateway", "--listen", "127.0.0.1:0", "--upstream", up.URL,
		"--consumer", fmt.Sprintf("gw-%d", gatewayConsumers.Add(1)), "--ready-file", ready, "--log-format", "json"}, args...)
	cmd := exec.Command(dedupdBin, args...)
	cmd.Env = append(withoutAddrEnv(), env...)
	logs := &dedupdproc.LogBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		werr := <-exited
		if t.Failed() {
			t.Logf("gateway (%v) logs:\n%s", werr, logs)
		}
	})
	for {
		if b, err := os.ReadFile(ready); err == nil && strings.HasSuffix(string(b), "\n") {
			return gatewayProcess{url: "http://" + strings.TrimSpace(string(b)), logs: logs}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the gateway exited (%v) before serving:\n%s", err, logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// gatewayFlags turns the suite's options into flags.
func gatewayFlags(opt httpidemtest.Options) []string {
	var f []string
	if opt.Wait != 0 {
		f = append(f, "--wait", max(opt.Wait, 0).String())
	}
	if opt.MaxStoredResponseBytes != 0 {
		f = append(f, "--max-stored-response-bytes", fmt.Sprint(opt.MaxStoredResponseBytes))
	}
	if opt.MaxRequestBytes != 0 {
		f = append(f, "--max-request-bytes", fmt.Sprint(opt.MaxRequestBytes))
	}
	if opt.On5xx != "" {
		f = append(f, "--on-5xx", opt.On5xx)
	}
	if opt.LeaseTTL != 0 {
		f = append(f, "--lease-ttl", opt.LeaseTTL.String())
	}
	for _, r := range opt.Rules {
		f = append(f, "--rule", r)
	}
	if opt.IdentityHeader != "" {
		f = append(f, "--identity-header", opt.IdentityHeader)
	}
	for _, h := range opt.FingerprintHeaders {
		f = append(f, "--fingerprint-header", h)
	}
	return f
}

// TestGatewayConformance runs the conformance suite against `dedupd
// gateway` processes, each in front of the suite's counting upstream.
func TestGatewayConformance(t *testing.T) {
	server := startDedupd(t, "--data-dir", t.TempDir(), "--max-result-bytes", fmt.Sprint(2<<20)).Addr
	httpidemtest.Run(t, func(t *testing.T, upstream http.Handler, opt httpidemtest.Options) string {
		return startGateway(t, server, upstream, gatewayFlags(opt)...)
	})
}
