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
	RunID       string        `json:"run_id"`
	Addr        string        `json:"addr"`
	Concurrency int           `json:"concurrency"`
	Duration    time.Duration `json:"-"`
	Count       int64         `json:"count,omitempty"`
	Rate        float64       `json:"rate,omitempty"`
	Baseline    bool          `json:"baseline"`
	// Redis says the scenarios that only claim, complete and release ran
	// on Redis as well.
	Redis     bool             `json:"redis_baseline,omitempty"`
	Scenarios []ScenarioReport `json:"scenarios"`
	// ServerPeakRSSBytes is the dedupd process's peak resident memory
	// (VmHWM) at the end of the run, when its pid was given.
	ServerPeakRSSBytes int64 `json:"server_peak_rss_bytes,omitempty"`
	// DedupdPID and PostmasterPID are the processes whose CPU time was
	// sampled (the postmaster with all its children); zero when not.
	DedupdPID     int `json:"dedupd_pid,omitempty"`
	PostmasterPID int `json:"postmaster_pid,omitempty"`
	// RedisPID is the Redis server whose CPU time was sampled.
	RedisPID int `json:"redis_pid,omitempty"`
	// WholeDatabaseServer says the database share is the whole PostgreSQL
	// server's; otherwise it is the run's database's processes'.
	WholeDatabaseServer bool `json:"whole_database_server,omitempty"`
	// CPUNote says why server CPU was not measured, or not all of it.
	CPUNote string `json:"cpu_note,omitempty"`
	// Consumer is the consumer the dedupd side claimed under.
	Consumer string `json:"consumer"`
	// RecordsDeleted counts the records the cleanup purged at the end;
	// CleanupNote says why it did not, when it could not.
	RecordsDeleted int64  `json:"records_deleted"`
	CleanupNote    string `json:"cleanup_note,omitempty"`
}

// ScenarioReport is one scenario, through dedupd and by hand.
type ScenarioReport struct {
	Name     string       `json:"name"`
	Service  Measurement  `json:"service"`
	Baseline *Measurement `json:"baseline,omitempty"`
	// Ratio is the service's throughput over the baseline's; above 1 the
	// service is faster.
	Ratio float64 `json:"ratio,omitempty"`
	// CPURatio is the service's server CPU per operation over the
	// baseline's; below 1 the service costs less. The steadiest figure on a
	// shared machine, where throughput depends on what else runs.
	CPURatio float64 `json:"cpu_ratio,omitempty"`
	// AboveFloorMicros is the service's server CPU per operation less the
	// floor scenario's (an empty call): what the work itself costs.
	AboveFloorMicros float64 `json:"cpu_above_floor_micros_per_op,omitempty"`
	// Redis is the scenario on Redis, when it ran there; RedisRatio and
	// RedisCPURatio are the service's throughput and CPU per operation
	// over Redis's, as Ratio and CPURatio are over the baseline's.
	Redis         *Measurement `json:"redis,omitempty"`
	RedisRatio    float64      `json:"redis_ratio,omitempty"`
	RedisCPURatio float64      `json:"redis_cpu_ratio,omitempty"`
	// KeysPerOp is the keys one operation handles: the batch size of a
	// batch scenario, else 1. Keys/s is ops/s times it, and CPU per key
	// the CPU per op over it.
	KeysPerOp int `json:"keys_per_op"`
}

// ratios are service's throughput and server CPU per op over a baseline's;
// each is 0 when either side's figure is missing.
func ratios(service, baseline Measurement) (throughput, cpu float64) {
	if baseline.PerSecond > 0 {
		throughput = service.PerSecond / baseline.PerSecond
	}
	return throughput, cpuRatio(service.CPU, baseline.CPU)
}

// cpuRatio is service's server CPU per op over baseline's; 0 when either
// was not measured.
func cpuRatio(service, baseline *ServerCPU) float64 {
	if service == nil || baseline == nil || baseline.Micros <= 0 {
		return 0
	}
	return service.Micros / baseline.Micros
}

// compareWithFloor fills in the scenarios' AboveFloorMicros when the floor
// was measured.
func compareWithFloor(scenarios []ScenarioReport) {
	var floor *ServerCPU
	for _, s := range scenarios {
		if s.Name == "floor" {
			floor = s.Service.CPU
		}
	}
	if floor == nil {
		return
	}
	for i := range scenarios {
		if s := &scenarios[i]; s.Name != "floor" && s.Service.CPU != nil {
			s.AboveFloorMicros = s.Service.CPU.Micros - floor.Micros
		}
	}
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
	// CPU is the server side's CPU time per operation, when measured.
	CPU *ServerCPU
	// GaveUpAfter, when not zero, is the run of failures in a row that
	// stopped the measurement, and LastError the last of them.
	GaveUpAfter int
	LastError   string
}

// MarshalJSON writes latencies as milliseconds.
func (m Measurement) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return json.Marshal(struct {
		Ops        int64      `json:"ops"`
		Errors     int64      `json:"errors"`
		FirstError string     `json:"first_error,omitempty"`
		Seconds    float64    `json:"seconds"`
		PerSecond  float64    `json:"per_second"`
		P50        float64    `json:"p50_ms"`
		P90        float64    `json:"p90_ms"`
		P99        float64    `json:"p99_ms"`
		Max        float64    `json:"max_ms"`
		CPU        *ServerCPU `json:"server_cpu,omitempty"`
		GaveUp     int        `json:"gave_up_after_errors,omitempty"`
		LastError  string     `json:"last_error,omitempty"`
	}{m.Ops, m.Errors, m.FirstError, m.Seconds, m.PerSecond, ms(m.P50), ms(m.P90), ms(m.P99), ms(m.Max), m.CPU,
		m.GaveUpAfter, m.LastError})
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// TableWidth is the most columns a line of WriteTable takes.
const TableWidth = 100

// WriteTable writes the report as an aligned table that fits TableWidth
// columns: one row per scenario and side with throughput, errors, p50 and
// p99, and the server CPU per operation; on dedupd's row, its ratios to the
// baseline. A batch scenario's keys/s and CPU per key, the first error of
// each side, and what the CPU columns sampled follow as notes. Every other
// figure is in WriteJSON's output.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tside\tops/s\terrors\tp50 ms\tp99 ms\tvs base\tcpu µs/op\tcpu vs base\t")
	row := func(name, side string, m Measurement, ratio, cpuRatio float64) {
		vs, cpu, cpuVs := "", "", ""
		if ratio > 0 {
			vs = strconv.FormatFloat(ratio, 'f', 2, 64) + "x"
		}
		if m.CPU != nil {
			cpu = strconv.FormatFloat(m.CPU.Micros, 'f', 1, 64)
		}
		if cpuRatio > 0 {
			cpuVs = strconv.FormatFloat(cpuRatio, 'f', 2, 64) + "x"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%d\t%s\t%s\t%s\t%s\t%s\t\n", truncate(name, 14), side, m.PerSecond, m.Errors,
			millis(m.P50), millis(m.P99), vs, cpu, cpuVs)
	}
	var notes []string
	for _, s := range r.Scenarios {
		// dedupd's row compares it with the PostgreSQL baseline; the Redis
		// row, which has its own bar, compares dedupd with Redis.
		row(s.Name, "dedupd", s.Service, s.Ratio, s.CPURatio)
		if s.Baseline != nil {
			row("", "baseline", *s.Baseline, 0, 0)
		}
		if s.Redis != nil {
			row("", "redis", *s.Redis, s.RedisRatio, s.RedisCPURatio)
		}
		if s.KeysPerOp > 1 {
			notes = append(notes, fmt.Sprintf("%s: %d keys/op, %.0f keys/s%s", s.Name, s.KeysPerOp,
				s.Service.PerSecond*float64(s.KeysPerOp), perKey(s.Service.CPU, s.KeysPerOp)))
		}
		for _, side := range []struct {
			name string
			m    *Measurement
		}{{"dedupd", &s.Service}, {"baseline", s.Baseline}, {"redis", s.Redis}} {
			if side.m != nil && side.m.FirstError != "" {
				notes = append(notes, fmt.Sprintf("%s %s: first error: %s", s.Name, side.name, side.m.FirstError))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if r.Redis {
		notes = append(notes, "a redis row's vs columns are dedupd's throughput and CPU per op over Redis's")
	}
	notes = append(notes, r.runLine())
	notes = append(notes, r.cpuLegend()...)
	notes = append(notes, r.cleanupLine())
	for _, n := range notes {
		for _, l := range wrap(n, TableWidth) {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

// runLine says how the run ran.
func (r Report) runLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d callers", r.Concurrency)
	if r.Rate > 0 {
		fmt.Fprintf(&b, " paced to %.0f ops/s", r.Rate)
	}
	if r.Count > 0 {
		fmt.Fprintf(&b, ", %d ops per scenario and side", r.Count)
	} else {
		fmt.Fprintf(&b, ", %s per scenario and side", r.Duration)
	}
	if r.ServerPeakRSSBytes > 0 {
		fmt.Fprintf(&b, ", dedupd peak RSS %.1f MiB", float64(r.ServerPeakRSSBytes)/(1<<20))
	}
	return b.String()
}

// cleanupLine says what the run left on the server.
func (r Report) cleanupLine() string {
	if r.CleanupNote != "" {
		return r.CleanupNote
	}
	return fmt.Sprintf("consumer %s: %d records deleted at the end", r.Consumer, r.RecordsDeleted)
}

// truncate shortens s to at most n runes.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// wrap breaks text into lines of at most width runes at spaces; a word
// longer than width is cut.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for word := range strings.FieldsSeq(text) {
		for len([]rune(word)) > width {
			if line != "" {
				lines, line = append(lines, line), ""
			}
			r := []rune(word)
			lines, word = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// perKey is ", N µs/key" of server CPU for a batch scenario, or "".
func perKey(c *ServerCPU, keys int) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", %.1f cpu µs/key", c.Micros/float64(keys))
}

// cpuLegend says what the CPU column sampled.
func (r Report) cpuLegend() []string {
	var sampled []string
	if r.DedupdPID > 0 {
		sampled = append(sampled, fmt.Sprintf("dedupd pid %d", r.DedupdPID))
	}
	if r.PostmasterPID > 0 {
		what := "its own time and that of the backends of the run's database and the shared helper processes"
		if r.WholeDatabaseServer {
			what = "with all its children (live, and reaped)"
		}
		sampled = append(sampled, fmt.Sprintf("PostgreSQL postmaster pid %d, %s", r.PostmasterPID, what))
	}
	if r.RedisPID > 0 {
		sampled = append(sampled, fmt.Sprintf("Redis pid %d (the redis rows count it alone)", r.RedisPID))
	}
	var out []string
	if len(sampled) > 0 {
		counted := ""
		if r.Baseline {
			counted = "; dedupd's row counts dedupd and the database, the baseline's the database only"
		}
		out = append(out, fmt.Sprintf("server CPU per op (utime+stime from /proc): %s%s", strings.Join(sampled, ", "), counted))
	}
	if r.CPUNote != "" {
		out = append(out, r.CPUNote)
	}
	return out
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
