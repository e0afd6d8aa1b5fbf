package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/metadata"
)

// opsMetricsAddr returns the --metrics-listen address from the ready file.
func (p *process) opsMetricsAddr(t *testing.T) string {
	t.Helper()
	if p.MetricsAddr == "" {
		t.Fatalf("the ready file names no metrics address; logs:\n%s", p.Logs)
	}
	return p.MetricsAddr
}

// opsScrape fetches /metrics and parses it.
func opsScrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// opsValue is the value of the counter or gauge of family whose labels
// include want; 0 when no such series exists.
func opsValue(families map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	f, ok := families[family]
	if !ok {
		return 0
	}
	total := 0.0
series:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue series
			}
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// opsHealthz returns the HTTP status of /healthz.
func opsHealthz(t *testing.T, addr string) int { return opsGet(t, addr, "/healthz") }

// opsGet returns the HTTP status of a GET of path on the metrics listener.
func opsGet(t *testing.T, addr, path string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// opsAuthFile writes an auth file and returns its path.
func opsAuthFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.yaml")
	opsRewrite(t, path, content)
	return path
}

// opsRewrite replaces a file atomically.
func opsRewrite(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".next"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func opsSHA256(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// opsBearer returns a context sending token, bounded so no call can hang a test.
func opsBearer(token string) (context.Context, context.CancelFunc) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	return context.WithTimeout(ctx, 10*time.Second)
}

// opsEventually polls cond every 50ms for up to 15s: for state that changes
// on a timer inside the server (health) or after a signal is handled.
func opsEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 15s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
