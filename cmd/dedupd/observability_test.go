package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestMetricsCountCalls: each kind of call moves its counter by exactly
// what was done, as scraped from /metrics; the log has one line per call
// with method, consumer and code, and never the result bytes.
func TestMetricsCountCalls(t *testing.T) {
	p := startDedupd(t, "--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0",
		"--rate-limit", "0.001", "--rate-burst", "5", "--log-all-calls")
	addr := p.opsMetricsAddr(t)
	c := dedupv1.NewDedupServiceClient(p.dial(t))
	ctx := context.Background()
	const secret = "result-bytes-never-logged"

	first, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "metrics", Key: "k", Digest: []byte("d")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "metrics", Key: "k", Digest: []byte("d")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "metrics", Key: "k", Digest: []byte("other")})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("digest mismatch: %v", err)
	}
	_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "metrics", Key: "k", FencingToken: first.GetFencingToken() + 1, Result: []byte(secret)})
	if status.Code(err) != codes.Aborted {
		t.Fatalf("complete with a stale token: %v", err)
	}
	if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "metrics", Key: "k", FencingToken: first.GetFencingToken(), Result: []byte(secret)}); err != nil {
		t.Fatal(err)
	}
	// The burst of 5 is used up: the sixth call is rate limited.
	_, err = c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "metrics", Key: "k"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("sixth call: %v, want RESOURCE_EXHAUSTED", err)
	}

	m := opsScrape(t, addr)
	want := []struct {
		family string
		labels map[string]string
		value  float64
	}{
		{"dedupd_claims_total", map[string]string{"consumer": "metrics", "outcome": "acquired"}, 1},
		{"dedupd_claims_total", map[string]string{"consumer": "metrics", "outcome": "in_progress"}, 1},
		{"dedupd_digest_conflicts_total", map[string]string{"consumer": "metrics"}, 1},
		{"dedupd_leases_lost_total", map[string]string{"consumer": "metrics", "method": "Complete"}, 1},
		{"dedupd_refused_calls_total", map[string]string{"reason": "RATE_LIMITED"}, 1},
		{"grpc_server_handled_total", map[string]string{"grpc_method": "Claim", "grpc_code": "OK"}, 2},
		{"grpc_server_handled_total", map[string]string{"grpc_method": "Complete", "grpc_code": "OK"}, 1},
		{"grpc_server_handled_total", map[string]string{"grpc_method": "Lookup", "grpc_code": "ResourceExhausted"}, 1},
		{"grpc_server_handling_seconds", map[string]string{"grpc_method": "Claim"}, 3},
		{"dedupd_serving", nil, 1},
		{"dedupd_panics_total", nil, 0},
	}
	for _, w := range want {
		if got := opsValue(m, w.family, w.labels); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.family, w.labels, got, w.value)
		}
	}
	// The embedded store, on Pebble by default, adds its engine's metrics:
	// the two writes above went through its WAL.
	if got := opsValue(m, "dedupd_pebble_wal_bytes_written_total", nil); got <= 0 {
		t.Errorf("dedupd_pebble_wal_bytes_written_total = %v after two writes, want > 0", got)
	}
	if code := opsHealthz(t, addr); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	if code := opsGet(t, addr, "/debug/pprof/heap?debug=1"); code != http.StatusOK {
		t.Errorf("/debug/pprof/heap = %d, want 200", code)
	}
	p.stop(t)

	logs := p.Logs.String()
	if strings.Contains(logs, secret) {
		t.Fatal("result bytes appear in the logs")
	}
	calls := 0
	for line := range strings.SplitSeq(logs, "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["grpc.method"] == nil {
			continue
		}
		calls++
		if e["consumer"] != "metrics" || e["grpc.code"] == nil || e["grpc.time_ms"] == nil {
			t.Errorf("call log line lacks consumer, code or duration: %s", line)
		}
	}
	if calls != 6 {
		t.Errorf("%d call log lines, want one per call (6)", calls)
	}
}

// TestHealthFollowsTheStore: with PostgreSQL behind a proxy, health turns
// NOT_SERVING (gRPC, /healthz and dedupd_serving) while the proxy is cut,
// and SERVING again once it is back, without a restart.
func TestHealthFollowsTheStore(t *testing.T) {
	direct := pgtest.URL(t)
	if out, err := runDedupd(t, "migrate", "--database-url", direct); err != nil {
		t.Fatalf("dedupd migrate: %v\n%s", err, out)
	}
	u, err := url.Parse(direct)
	if err != nil || u.Host == "" {
		t.Fatalf("need a postgres:// URL; got %q (%v)", direct, err)
	}
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr
	p := startDedupd(t, "--database-url", u.String(), "--health-interval", "100ms", "--metrics-listen", "127.0.0.1:0")
	addr := p.opsMetricsAddr(t)
	hc := healthpb.NewHealthClient(p.dial(t))
	state := func() healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "dedup.v1.DedupService"})
		if err != nil {
			t.Fatalf("health check: %v", err)
		}
		return resp.GetStatus()
	}
	if s := state(); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("at start: %v, want SERVING", s)
	}

	proxy.cut()
	opsEventually(t, "NOT_SERVING during the outage", func() bool { return state() == healthpb.HealthCheckResponse_NOT_SERVING })
	if code := opsHealthz(t, addr); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz during the outage = %d, want 503", code)
	}
	if v := opsValue(opsScrape(t, addr), "dedupd_serving", nil); v != 0 {
		t.Errorf("dedupd_serving during the outage = %v, want 0", v)
	}
	if v := opsValue(opsScrape(t, addr), "dedupd_store_errors_total", map[string]string{"op": "ping", "class": "unavailable"}); v < 1 {
		t.Errorf("dedupd_store_errors_total{op=ping,class=unavailable} = %v, want at least 1", v)
	}

	proxy.listen(t, proxy.addr)
	opsEventually(t, "SERVING after the database returned", func() bool { return state() == healthpb.HealthCheckResponse_SERVING })
	if code := opsHealthz(t, addr); code != http.StatusOK {
		t.Errorf("/healthz after recovery = %d, want 200", code)
	}
	p.stop(t)
}
