package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// consumerLabels scrapes a dedupd's /metrics and returns the consumer
// label values of dedupd_claims_total, sorted.
func consumerLabels(t *testing.T, metricsAddr string) []string {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, m := range families["dedupd_claims_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "consumer" && !slices.Contains(labels, l.GetValue()) {
				labels = append(labels, l.GetValue())
			}
		}
	}
	slices.Sort(labels)
	return labels
}

// Two bench runs against a real dedupd add one consumer label to its
// metrics in all, leave no record behind, and, off a terminal, write no
// progress line (no \r) into the log.
func TestCLIBenchCleansUpAndAddsOneConsumerLabel(t *testing.T) {
	bin, err := dedupdproc.Build("github.com/dedupd/dedupd/cmd/dedupd")
	if err != nil {
		t.Fatal(err)
	}
	p := dedupdproc.Start(t, bin, append([]string{"--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0"}, serveFlags...)...)
	s := newServer(t, p.Addr)
	for range 2 {
		r := s.ok(t, "bench", "--scenarios", "cycle,replay", "-n", "50", "-c", "2", "--replay-keys", "10")
		if strings.Contains(r.stderr, "\r") || strings.Contains(r.stdout, "\r") {
			t.Errorf("progress written off a terminal:\n%q", r.stderr)
		}
		if !strings.Contains(r.stdout, "consumer dedupctl-bench: 60 records deleted at the end") {
			t.Errorf("bench output does not report its cleanup:\n%v", r)
		}
	}
	if got := consumerLabels(t, p.MetricsAddr); !slices.Equal(got, []string{"_other", "dedupctl-bench"}) {
		t.Errorf("consumer labels after two runs = %v, want [_other dedupctl-bench]", got)
	}
	var stats dedupv1.StatsResponse
	parseJSON(t, s.ok(t, "stats", "-o", "json").stdout, &stats)
	for _, c := range stats.GetConsumers() {
		if c.GetPending()+c.GetCompleted()+c.GetRejected()+c.GetReleased() != 0 {
			t.Errorf("records left after the runs: %v", c)
		}
	}
}

// The engine limit left dedupctl: --in-process names where it went, with
// the engine asked for, and reaches no server.
func TestCLIBenchInProcessSaysWhereItWent(t *testing.T) {
	newServer(t, "127.0.0.1:1").fails(t, 1, "run `dedupd bench-engine --engine pebble` instead", "bench", "--in-process", "pebble")
}
