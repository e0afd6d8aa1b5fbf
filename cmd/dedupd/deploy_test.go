package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// The alert rules and the dashboard that ship in deploy/ (docs/operations.md).
const (
	rulesFile     = "../../deploy/prometheus/dedupd-rules.yml"
	dashboardFile = "../../deploy/grafana/dedupd.json"
)

// TestDeployNamesExportedMetrics: every metric that an alert rule or a
// dashboard query names is one a real dedupd exports on /metrics before
// any call has been made, so that no alert or panel silently watches a
// series that does not exist yet (every counter with known labels starts
// at 0; the consumer-labelled ones under "_other").
func TestDeployNamesExportedMetrics(t *testing.T) {
	p := startDedupd(t, "--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0")
	exported := exportedSeriesNames(opsScrape(t, p.opsMetricsAddr(t)))

	queries := map[string][]string{"rules": ruleQueries(t), "dashboard": dashboardQueries(t)}
	for source, exprs := range queries {
		if len(exprs) < 5 {
			t.Fatalf("%s: only %d queries found; is the file read right?", source, len(exprs))
		}
		for _, expr := range exprs {
			names, err := metricNames(expr)
			if err != nil {
				t.Errorf("%s: %v", source, err)
				continue
			}
			for _, name := range names {
				if !exported[name] {
					t.Errorf("%s: %q names %s, which dedupd does not export", source, expr, name)
				}
			}
		}
	}
}

// exportedSeriesNames lists the names a query can select: a family's own
// name, and for histograms and summaries the series Prometheus stores for
// them (_bucket, _sum, _count).
func exportedSeriesNames(families map[string]*dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for name, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default:
			names[name] = true
		}
	}
	return names
}

// ruleQueries returns the expression of every rule in the rules file.
func ruleQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct{ Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var exprs []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}

// dashboardQueries returns every PromQL expression in the dashboard: each
// "expr" at any depth (panel targets), and the metric selector of each
// label_values() template variable, with Grafana's variables replaced by
// values PromQL parses.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Templating struct {
			List []struct {
				Type  string
				Query json.RawMessage
			}
		}
	}
	var tree any
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	exprs := collectExprs(tree, nil)
	for _, v := range dashboard.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("template variable query: %v", err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("template variable query %q is not label_values(selector, label)", q.Query)
		}
		exprs = append(exprs, m[1])
	}
	for i, e := range exprs {
		exprs[i] = grafanaVariable.ReplaceAllStringFunc(e, grafanaValue)
	}
	return exprs
}

// labelValues matches Grafana's label_values(selector, label) query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*\w+\s*\)\s*$`)

// grafanaVariable matches $name, ${name} and ${name:format}.
var grafanaVariable = regexp.MustCompile(`\$(\w+|\{\w+(:\w+)?\})`)

// grafanaValue stands in for a variable: a duration for Grafana's interval
// macros, which stand where PromQL wants one, and a plain word for the
// rest, which stand inside label values.
func grafanaValue(v string) string {
	switch strings.Trim(v, "${}") {
	case "__rate_interval", "__interval", "__range":
		return "5m"
	}
	return "x"
}

func collectExprs(node any, into []string) []string {
	switch n := node.(type) {
	case map[string]any:
		if e, ok := n["expr"].(string); ok {
			into = append(into, e)
		}
		for _, child := range n {
			into = collectExprs(child, into)
		}
	case []any:
		for _, child := range n {
			into = collectExprs(child, into)
		}
	}
	return into
}

// metricNames returns the metric name of every selector in a PromQL
// expression, sorted and without repeats. A selector without a fixed name
// (e.g. {job="x"} or {__name__=~"a|b"}) is an error: it could match
// anything, so it cannot be checked.
func metricNames(expr string) ([]string, error) {
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", expr, err)
	}
	var names []string
	for _, matchers := range parser.ExtractSelectors(ast) {
		name := ""
		for _, m := range matchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			return nil, fmt.Errorf("%q has a selector without a metric name", expr)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// TestMetricNames: the names come from selectors only, never from
// functions, label names or values, keywords or strings.
func TestMetricNames(t *testing.T) {
	cases := []struct {
		expr string
		want []string
		bad  bool
	}{
		{`up`, []string{"up"}, false},
		{`sum by (job) (rate(a_total{class="b_total",op!="ping"}[5m])) > 0`, []string{"a_total"}, false},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) > 0.25`, []string{"h_bucket"}, false},
		{`x or on(instance) increase(y[10m]) > 0 unless ignoring(result) x`, []string{"x", "y"}, false},
		{`time() - ts > 10 * 60 and ts > 0`, []string{"ts"}, false},
		{`{__name__="named"}`, []string{"named"}, false},
		{`label_replace(m, "dst", "not_a_metric", "src", "(.*)")`, []string{"m"}, false},
		{`time()`, nil, false},
		{`{job="x"}`, nil, true},
		{`{__name__=~"a|b"}`, nil, true},
		{`sum(rate(a[5m]`, nil, true},
	}
	for _, tc := range cases {
		got, err := metricNames(tc.expr)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, %v; want %v (error: %v)", tc.expr, got, err, tc.want, tc.bad)
		}
	}
}

// TestDashboardQueriesAreFound: the dashboard reader sees the template
// variable's selector and replaces Grafana's macros.
func TestDashboardQueriesAreFound(t *testing.T) {
	exprs := dashboardQueries(t)
	if !slices.Contains(exprs, "dedupd_serving") {
		t.Errorf("the $job variable's selector dedupd_serving is not among the queries")
	}
	for _, e := range exprs {
		if strings.Contains(e, "$") {
			t.Errorf("a Grafana variable is left in %q", e)
		}
	}
}
