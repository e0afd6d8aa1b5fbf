package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of a run.
type Report struct {
	RunID       string           `json:"run_id"`
	Addr        string           `json:"addr"`
	Concurrency int              `json:"concurrency"`
	Duration    time.Duration    `json:"-"`
	Count       int64            `json:"count,omitempty"`
	Rate        float64          `json:"rate,omitempty"`
	Baseline    bool             `json:"baseline"`
	Scenarios   []ScenarioReport `json:"scenarios"`
	// ServerPeakRSSBytes is the dedupd process's peak resident memory
	// (VmHWM) at the end of the run, when its pid was given.
	ServerPeakRSSBytes int64 `json:"server_peak_rss_bytes,omitempty"`
}

// ScenarioReport is one scenario, through dedupd and by hand.
type ScenarioReport struct {
	Name     string       `json:"name"`
	Service  Measurement  `json:"service"`
	Baseline *Measurement `json:"baseline,omitempty"`
	// Ratio is the service's throughput over the baseline's; above 1 the
	// service is faster.
	Ratio float64 `json:"ratio,omitempty"`
}

// Measurement is one side of one scenario.
type Measurement struct {
	// Ops counts the operations that succeeded; PerSecond and the
	// latencies are theirs. Errors counts the ones that failed.
	Ops        int64
	Errors     int64
	FirstError string
	Seconds    float64
	PerSecond  float64
	P50, P90   time.Duration
	P99, Max   time.Duration
}

// MarshalJSON writes latencies as milliseconds.
func (m Measurement) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return json.Marshal(struct {
		Ops        int64   `json:"ops"`
		Errors     int64   `json:"errors"`
		FirstError string  `json:"first_error,omitempty"`
		Seconds    float64 `json:"seconds"`
		PerSecond  float64 `json:"per_second"`
		P50        float64 `json:"p50_ms"`
		P90        float64 `json:"p90_ms"`
		P99        float64 `json:"p99_ms"`
		Max        float64 `json:"max_ms"`
	}{m.Ops, m.Errors, m.FirstError, m.Seconds, m.PerSecond, ms(m.P50), ms(m.P90), ms(m.P99), ms(m.Max)})
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as an aligned table: one row per scenario
// and side, and the service/baseline ratio on the service's row.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tside\tops\terrors\tops/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tvs baseline\t")
	row := func(name, side string, m Measurement, ratio string) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", name, side, m.Ops, m.Errors, m.PerSecond,
			millis(m.P50), millis(m.P90), millis(m.P99), millis(m.Max), ratio)
	}
	var errs []string
	for _, s := range r.Scenarios {
		ratio := ""
		if s.Baseline != nil {
			ratio = strconv.FormatFloat(s.Ratio, 'f', 2, 64) + "x"
		}
		row(s.Name, "dedupd", s.Service, ratio)
		if s.Baseline != nil {
			row("", "baseline", *s.Baseline, "")
		}
		for side, m := range map[string]*Measurement{"dedupd": &s.Service, "baseline": s.Baseline} {
			if m != nil && m.FirstError != "" {
				errs = append(errs, fmt.Sprintf("%s %s: first error: %s", s.Name, side, m.FirstError))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d callers", r.Concurrency)
	if r.Rate > 0 {
		fmt.Fprintf(w, " paced to %.0f ops/s", r.Rate)
	}
	if r.Count > 0 {
		fmt.Fprintf(w, ", %d ops per scenario and side", r.Count)
	} else {
		fmt.Fprintf(w, ", %s per scenario and side", r.Duration)
	}
	if r.ServerPeakRSSBytes > 0 {
		fmt.Fprintf(w, ", dedupd peak RSS %.1f MiB", float64(r.ServerPeakRSSBytes)/(1<<20))
	}
	fmt.Fprintln(w)
	for _, e := range errs {
		fmt.Fprintln(w, e)
	}
	return nil
}

func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

// peakRSS reads a process's peak resident set size from /proc (Linux).
func peakRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
