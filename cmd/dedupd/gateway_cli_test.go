package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client/dedupdtest"
)

// flakyUpstream drops the connection of its first request without an
// answer (after reading it: the upstream may have acted), then answers 201.
type flakyUpstream struct{ calls atomic.Int64 }

func (u *flakyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.ReadAll(r.Body)
	if u.calls.Add(1) == 1 {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "call %d", u.calls.Load())
}

func postKey(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/orders", strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestGatewayUpstreamFailure: an upstream that breaks the connection gets
// the client a 502 problem; --on-upstream-error release lets the retry run
// again, keep holds the key (409) until its lease runs out.
func TestGatewayUpstreamFailure(t *testing.T) {
	server := startDedupd(t, "--data-dir", t.TempDir()).Addr
	cases := []struct {
		mode       string
		retry      int
		wantCalls2 int64
	}{
		{"release", http.StatusCreated, 2},
		{"keep", http.StatusConflict, 1},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			up := &flakyUpstream{}
			gw := startGateway(t, server, up, "--on-upstream-error", tc.mode, "--wait", "0", "--lease-ttl", "1m")
			if code, body := postKey(t, gw, "k1"); code != http.StatusBadGateway || !strings.Contains(body, "#upstream-failed") {
				t.Fatalf("first: %d %s; want the gateway's 502 problem", code, body)
			}
			if code, body := postKey(t, gw, "k1"); code != tc.retry {
				t.Fatalf("retry: %d %s; want %d", code, body, tc.retry)
			}
			if got := up.calls.Load(); got != tc.wantCalls2 {
				t.Fatalf("upstream calls %d, want %d", got, tc.wantCalls2)
			}
		})
	}
}

// TestGatewayConnectsWithToken: --token reaches a dedupd that requires
// one (the connection flags are dedupctl's), and a gateway without it is
// refused by dedupd, which the client sees as a 500 problem, not a pass.
func TestGatewayConnectsWithToken(t *testing.T) {
	auth := dedupdtest.AuthFile(t, []dedupdtest.Token{{Token: "gw-secret", Consumers: []string{"*"}}}, "")
	server := startDedupd(t, "--data-dir", t.TempDir(), "--auth-tokens", auth).Addr
	up := &flakyUpstream{}
	up.calls.Store(1) // answer every request
	with := startGateway(t, server, up, "--token", "gw-secret")
	if code, _ := postKey(t, with, "k1"); code != http.StatusCreated {
		t.Fatalf("with the token: %d", code)
	}
	without := startGateway(t, server, up)
	if code, body := postKey(t, without, "k2"); code != http.StatusInternalServerError || !strings.Contains(body, "#internal") {
		t.Fatalf("without the token: %d %s", code, body)
	}
	if got := up.calls.Load(); got != 2 {
		t.Fatalf("upstream calls %d (counting from 1), want one more", got)
	}
}

// TestGatewayConnectsOverTLS: --tls-ca and --token, as dedupctl takes
// them, reach a dedupd that serves TLS and requires a token.
func TestGatewayConnectsOverTLS(t *testing.T) {
	pki := dedupdtest.TestPKI(t)
	auth := dedupdtest.AuthFile(t, []dedupdtest.Token{{Token: "gw-secret", Consumers: []string{"*"}}}, "")
	server := startDedupd(t, append([]string{"--data-dir", t.TempDir(), "--auth-tokens", auth}, pki.TLSFlags(false)...)...).Addr
	up := &flakyUpstream{}
	up.calls.Store(1)
	gw := startGateway(t, server, up, "--tls-ca", pki.CA, "--token", "gw-secret")
	first, body := postKey(t, gw, "k1")
	again, replay := postKey(t, gw, "k1")
	if first != http.StatusCreated || again != first || replay != body || up.calls.Load() != 2 {
		t.Fatalf("over TLS: %d %q, then %d %q, %d upstream calls (from 1); want one 201 and its replay",
			first, body, again, replay, up.calls.Load())
	}
}

// TestGatewayReadsDedupdAddr: with no --server the gateway finds dedupd
// at DEDUPD_ADDR, ahead of its older DEDUPD_SERVER (here pointing nowhere):
// a keyed request runs once and its retry is replayed.
func TestGatewayReadsDedupdAddr(t *testing.T) {
	server := startDedupd(t, "--data-dir", t.TempDir()).Addr
	up := &flakyUpstream{}
	up.calls.Store(1) // answer every request
	gw := startGatewayEnv(t, []string{"DEDUPD_ADDR=" + server, "DEDUPD_SERVER=127.0.0.1:1"}, up)
	first, body := postKey(t, gw.url, "k1")
	again, replay := postKey(t, gw.url, "k1")
	if first != http.StatusCreated || again != first || replay != body || up.calls.Load() != 2 {
		t.Fatalf("through DEDUPD_ADDR: %d %q, then %d %q, %d upstream calls (from 1); want one 201 and its replay",
			first, body, again, replay, up.calls.Load())
	}
}

// TestGatewayFlags: mistakes are refused at start, naming the flag.
func TestGatewayFlags(t *testing.T) {
	cases := [][2]string{
		{"--rule=POST orders=required", "path prefix must start with /"},
		{"--rule=POST /=sometimes", "not one of required"},
		{"--on-5xx=maybe", "--on-5xx"},
		{"--on-upstream-error=store", "--on-upstream-error"},
		{"--upstream=ftp://x", "--upstream"},
	}
	for _, c := range cases {
		out, err := runDedupd(t, "gateway", "--consumer", "c", "--upstream", "http://127.0.0.1:1", c[0])
		if err == nil || !strings.Contains(out, c[1]) {
			t.Errorf("%s: %v, %q; want a refusal naming %q", c[0], err, out, c[1])
		}
	}
}

// TestGatewayWaitsForDedupd: a gateway started before its dedupd serves
// anyway, reports not-ready on its readiness path, logs at ERROR naming
// dedupd's address, answers keyed requests 503 with Retry-After without
// calling the upstream; once dedupd comes up it turns ready and requests
// go through.
func TestGatewayWaitsForDedupd(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	up := &flakyUpstream{}
	up.calls.Store(1) // answer every request
	gw := startGatewayEnv(t, nil, up, "--server", addr)
	readyURL := gw.url + "/.well-known/dedupd-gateway/ready"
	readiness := func() (int, string) {
		resp, err := http.Get(readyURL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readiness(); code != http.StatusServiceUnavailable || !strings.Contains(body, addr) {
		t.Fatalf("readiness without dedupd: %d %q; want 503 naming %s", code, body, addr)
	}
	req, _ := http.NewRequest(http.MethodPost, gw.url+"/orders", strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || up.calls.Load() != 1 {
		t.Fatalf("keyed request without dedupd: %d, Retry-After %q, upstream calls %d (from 1)", resp.StatusCode, resp.Header.Get("Retry-After"), up.calls.Load())
	}
	for i := 0; !strings.Contains(gw.logs.String(), `"level":"ERROR"`); i++ {
		if i > 3000 {
			t.Fatalf("no ERROR line about dedupd:\n%s", gw.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if logs := gw.logs.String(); !strings.Contains(logs, `"dedupd":"`+addr+`"`) {
		t.Fatalf("the ERROR line does not name dedupd's address %s:\n%s", addr, logs)
	}

	startDedupd(t, "--data-dir", t.TempDir(), "--listen", addr)
	for i := 0; ; i++ {
		if code, _ := readiness(); code == http.StatusOK {
			break
		}
		if i > 3000 {
			t.Fatalf("the gateway never turned ready:\n%s", gw.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := postKey(t, gw.url, "k2"); code != http.StatusCreated || up.calls.Load() != 2 {
		t.Fatalf("keyed request once ready: %d, upstream calls %d (from 1)", code, up.calls.Load())
	}
}
