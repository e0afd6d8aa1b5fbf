// Package loadtest is `dedupctl bench`: it drives a running dedupd over gRPC
// with concurrent callers, scenario by scenario, and measures beside it the
// SQL a user would write by hand instead of running dedupd, against the same
// PostgreSQL, at the same concurrency, so that every number comes with the
// bar it must clear.
//
// Each scenario runs for a fixed time or a fixed count of operations, first
// through the service, then (with a baseline database) by hand. An
// operation is the unit a user's worker performs: one claim of a new key,
// one claim plus complete, one replayed claim, and so on (see scenarios.go).
// Latency is measured per operation into fixed-size histograms, so a long
// run needs no more memory than a short one.
package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// Config is one bench run.
type Config struct {
	// Addr is the dedupd gRPC address, host:port.
	Addr string
	// BaselineDatabaseURL, when set, is the PostgreSQL the hand-written
	// baseline runs on: the database dedupd uses, for a fair comparison.
	BaselineDatabaseURL string
	// Scenarios to run, in order; empty means all of Scenarios().
	Scenarios []string
	// Concurrency is the number of callers.
	Concurrency int
	// Duration bounds each scenario's run on each side, unless Count is set.
	Duration time.Duration
	// Count, when positive, runs exactly this many operations per scenario
	// on each side instead.
	Count int64
	// Rate, when positive, paces the operations to this many per second
	// in total (an open loop): operation i is due at i/Rate after the
	// start, and its latency is counted from when it was due, so a service
	// that falls behind is charged for the wait too.
	Rate float64
	// ReplayKeys is how many completed keys replay claims cycle through.
	ReplayKeys int
	// ContendedKeys is how many keys the contended scenario shares.
	ContendedKeys int
	// ResultBytes is the size of each stored result.
	ResultBytes int
	// BatchSize is the keys per call of the batch scenarios (batch.go).
	BatchSize int
	// Progress, when set, gets a progress line per second.
	Progress io.Writer
	// ServerPID, when set, is the local dedupd process whose peak resident
	// memory and CPU time are reported.
	ServerPID int
	// PostmasterPID, when set, is the local PostgreSQL server whose CPU
	// time (its own and its children's) is reported. Zero finds it from
	// the baseline database when that runs on this machine.
	PostmasterPID int
	// WholeDatabaseServer counts every process of the PostgreSQL server,
	// live or exited, as the database's share; otherwise only the
	// processes that serve the run's database and the server's shared
	// helpers are (the only fair count on a server that others use too).
	WholeDatabaseServer bool
	// MaxConsecutiveErrors stops the run when this many operations in a row
	// (across all callers) have failed: the server is gone or refuses
	// everything, and hammering it measures nothing. Zero means 100.
	MaxConsecutiveErrors int
	// Consumer is the consumer every dedupd-side key is claimed under; zero
	// means BenchConsumer. Runs share it, so that a run adds no consumer
	// label to the server's metrics; keys carry the run's id.
	Consumer string
	// KeepRecords leaves the run's records on the server; by default the
	// consumer's records are purged at the end (cleanup.go).
	KeepRecords bool
	// InProcess, when set, names an embedded engine (Engines) to drive in
	// this process instead of dedupd: the engine limit (engine.go), in a
	// fresh store in InProcessDir or, when that is empty, a temporary
	// directory. The CPU per operation is then this process's.
	InProcess    string
	InProcessDir string
	// Conn, when set, is the connection to dedupd (with whatever TLS and
	// credentials it was made with) and Addr only names it in the report;
	// otherwise Run dials Addr in plaintext.
	Conn grpc.ClientConnInterface
}

// Scenarios lists the scenario names in their default order.
func Scenarios() []string {
	names := make([]string, len(scenarioTable))
	for i, sc := range scenarioTable {
		names[i] = sc.name
	}
	return names
}

func (c *Config) defaults() error {
	if named, ok := c.Conn.(interface{ Target() string }); ok && c.Addr == "" {
		c.Addr = named.Target()
	}
	if c.InProcess != "" && c.BaselineDatabaseURL != "" {
		return errors.New("loadtest: --in-process runs no baseline")
	}
	if c.Addr == "" && c.Conn == nil && c.InProcess == "" {
		return errors.New("loadtest: no dedupd address")
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = Scenarios()
		if c.InProcess != "" {
			c.Scenarios = slices.DeleteFunc(c.Scenarios, func(s string) bool { sc, _ := scenarioNamed(s); return sc.batch })
		}
	}
	for _, s := range c.Scenarios {
		if sc, _ := scenarioNamed(s); c.InProcess != "" && sc.batch {
			return fmt.Errorf("loadtest: scenario %s has no in-process form (batches are the service's)", s)
		}
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios(), s) {
			return fmt.Errorf("loadtest: unknown scenario %q (have %s)", s, strings.Join(Scenarios(), ", "))
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 32
	}
	if c.Count <= 0 && c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.ReplayKeys <= 0 {
		c.ReplayKeys = 1000
	}
	if c.ContendedKeys <= 0 {
		c.ContendedKeys = 8
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.ResultBytes < 0 {
		c.ResultBytes = 0
	}
	if c.MaxConsecutiveErrors <= 0 {
		c.MaxConsecutiveErrors = 100
	}
	if c.Consumer == "" {
		c.Consumer = BenchConsumer
	}
	return nil
}

// Run runs the scenarios and reports them. A scenario whose operations fail
// is still reported, with its error count and first error; Run fails when
// it cannot set up, or when Config.MaxConsecutiveErrors operations in a row
// failed (it then returns the report so far, that scenario included). At
// the end it deletes what it stored (cleanup.go), even when it fails.
func Run(ctx context.Context, cfg Config) (report Report, err error) {
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	runID := newRunID()
	report = Report{RunID: runID, Addr: cfg.Addr, Concurrency: cfg.Concurrency,
		Duration: cfg.Duration, Count: cfg.Count, Rate: cfg.Rate, Consumer: cfg.Consumer}
	var svc operator
	if cfg.InProcess != "" {
		eng, err := openEngine(ctx, cfg, cfg.InProcess, cfg.InProcessDir)
		if err != nil {
			return Report{}, err
		}
		defer eng.close()
		svc, report.Addr, cfg.ServerPID = eng, "in-process "+cfg.InProcess+" engine", os.Getpid()
		defer func() {
			report.CPUNote = strings.TrimSpace(fmt.Sprintf("in-process %s engine: the dedupd rows are the store driven in this process, without gRPC; "+
				"their CPU is this process's, the callers' loop included. %s", cfg.InProcess, report.CPUNote))
		}()
	} else {
		dialed, err := dialService(cfg, runID)
		if err != nil {
			return Report{}, err
		}
		defer dialed.close()
		if !cfg.KeepRecords {
			defer dialed.cleanup(&report)
		}
		svc = dialed
	}
	var base *baseline
	if cfg.BaselineDatabaseURL != "" {
		if base, err = openBaseline(ctx, cfg, runID); err != nil {
			return Report{}, err
		}
		defer base.close()
	}
	report.Baseline = base != nil
	cpu := newCPUSampler(ctx, cfg, base, &report)
	for _, name := range cfg.Scenarios {
		sr, err := runScenario(ctx, cfg, name, svc, base, cpu)
		if errors.Is(err, errGaveUp) {
			report.Scenarios = append(report.Scenarios, sr)
		}
		if err != nil {
			return report, err
		}
		report.Scenarios = append(report.Scenarios, sr)
	}
	compareWithFloor(report.Scenarios)
	if cfg.ServerPID > 0 {
		report.ServerPeakRSSBytes, _ = peakRSS(cfg.ServerPID)
	}
	return report, nil
}

// operator sets up a scenario's operation on one side: dedupd, or the
// in-process engine (engine.go).
type operator interface {
	operation(ctx context.Context, name string) (operation, error)
}

func runScenario(ctx context.Context, cfg Config, name string, svc operator, base *baseline, cpu *cpuSampler) (ScenarioReport, error) {
	sr := ScenarioReport{Name: name, KeysPerOp: 1}
	if sc, _ := scenarioNamed(name); sc.batch {
		sr.KeysPerOp = cfg.BatchSize
	}
	op, err := svc.operation(ctx, name)
	if err != nil {
		return sr, fmt.Errorf("loadtest: setting up %s on dedupd: %w", name, err)
	}
	sr.Service = measureCPU(ctx, cfg, name+" dedupd", op, cpu, true)
	if err := sr.Service.gaveUp(name, "dedupd"); err != nil {
		return sr, err
	}
	if sc, _ := scenarioNamed(name); base == nil || sc.serviceOnly {
		return sr, ctx.Err()
	}
	op, err = base.operation(ctx, name)
	if err != nil {
		return sr, fmt.Errorf("loadtest: setting up %s on the baseline: %w", name, err)
	}
	m := measureCPU(ctx, cfg, name+" baseline", op, cpu, false)
	sr.Baseline = &m
	if err := m.gaveUp(name, "the baseline"); err != nil {
		return sr, err
	}
	if m.PerSecond > 0 {
		sr.Ratio = sr.Service.PerSecond / m.PerSecond
	}
	sr.CPURatio = cpuRatio(sr.Service.CPU, m.CPU)
	return sr, ctx.Err()
}

// measureCPU is measure, with the server side's CPU time per operation
// when a sampler is given. countDedupd says whether dedupd's share counts
// (it does not for the baseline, which does not go through dedupd).
func measureCPU(ctx context.Context, cfg Config, label string, op operation, cpu *cpuSampler, countDedupd bool) Measurement {
	if cpu == nil {
		return measure(ctx, cfg, label, op)
	}
	before, errBefore := cpu.sample()
	m := measure(ctx, cfg, label, op)
	after, errAfter := cpu.sample()
	if errBefore == nil && errAfter == nil {
		m.CPU = perOp(before, after, m.Ops+m.Errors, countDedupd)
	}
	return m
}

// newCPUSampler returns the sampler of the server side's CPU time, or nil
// when there is nothing local to sample; it says in the report what it
// samples, or why the database is left out.
func newCPUSampler(ctx context.Context, cfg Config, base *baseline, report *Report) *cpuSampler {
	s := &cpuSampler{proc: "/proc", dedupdPID: cfg.ServerPID, postmasterPID: cfg.PostmasterPID}
	if s.postmasterPID == 0 && base != nil {
		pid, err := findPostmaster(ctx, base.pool, s.proc)
		if err != nil {
			report.CPUNote = fmt.Sprintf("database CPU not measured: %v", err)
		}
		s.postmasterPID = pid
	}
	if base != nil && !cfg.WholeDatabaseServer {
		s.databasePIDs = runDatabasePIDs(ctx, base.pool)
	}
	report.WholeDatabaseServer = s.postmasterPID > 0 && s.databasePIDs == nil
	if s.dedupdPID == 0 && s.postmasterPID == 0 {
		return nil
	}
	if _, err := s.sample(); err != nil {
		report.CPUNote = fmt.Sprintf("server CPU not measured: %v", err)
		return nil
	}
	report.DedupdPID, report.PostmasterPID = s.dedupdPID, s.postmasterPID
	return s
}

// operation performs operation number i of a scenario for one caller.
type operation func(ctx context.Context, i int64) error

// measure runs op from cfg.Concurrency callers until the count is reached
// or the duration is up, and summarises it. Ops, the rate and the
// latencies are of the operations that succeeded; Errors counts the rest.
// The end of the duration stops callers from starting operations; those in
// flight finish, so that none is cut off and miscounted.
//
// A caller whose operation failed waits before its next one (failureBackoff)
// and the run stops once cfg.MaxConsecutiveErrors operations in a row have
// failed (Measurement.GaveUp): a server that is gone gets a few hundred
// calls, not hundreds of thousands.
func measure(ctx context.Context, cfg Config, label string, op operation) Measurement {
	var (
		next, errs atomic.Int64
		streak     atomic.Int64 // operations failed in a row, all callers
		firstErr   atomic.Value
		lastErr    atomic.Value
		gaveUp     atomic.Bool
		wg         sync.WaitGroup
		hists      = make([]histogram, cfg.Concurrency)
		stop       atomic.Bool
	)
	if cfg.Count <= 0 {
		timer := time.AfterFunc(cfg.Duration, func() { stop.Store(true) })
		defer timer.Stop()
	}
	start := time.Now()
	stopProgress := progress(cfg.Progress, label, start, &next, &errs)
	for c := range cfg.Concurrency {
		wg.Go(func() {
			wait := failureBackoff()
			for !stop.Load() && ctx.Err() == nil {
				i := next.Add(1)
				if cfg.Count > 0 && i > cfg.Count {
					next.Add(-1)
					return
				}
				t0 := time.Now()
				if cfg.Rate > 0 {
					t0 = start.Add(time.Duration(float64(i-1) / cfg.Rate * float64(time.Second)))
					if wait := time.Until(t0); wait > 0 {
						time.Sleep(wait)
					}
				}
				err := op(ctx, i)
				if err != nil && ctx.Err() != nil {
					// The run was cancelled: not the operation's failure.
					next.Add(-1)
					return
				}
				if err == nil {
					streak.Store(0)
					wait.Reset()
					hists[c].record(time.Since(t0))
					continue
				}
				// A failure is not throughput: a server that fails fast
				// would otherwise look fast. It is counted apart, and its
				// latency stays out of the percentiles.
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				lastErr.Store(err.Error())
				if streak.Add(1) >= int64(cfg.MaxConsecutiveErrors) {
					gaveUp.Store(true)
					stop.Store(true)
					return
				}
				sleep(ctx, wait.NextBackOff())
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	var all histogram
	for i := range hists {
		all.merge(&hists[i])
	}
	m := Measurement{Ops: all.n, Errors: errs.Load(), Seconds: elapsed.Seconds(),
		P50: all.quantile(0.5), P90: all.quantile(0.9), P99: all.quantile(0.99),
		Max: time.Duration(all.max) * time.Microsecond}
	if elapsed > 0 {
		m.PerSecond = float64(all.n) / elapsed.Seconds()
	}
	if e, ok := firstErr.Load().(string); ok {
		m.FirstError = e
	}
	if e, ok := lastErr.Load().(string); ok && gaveUp.Load() {
		m.GaveUpAfter, m.LastError = cfg.MaxConsecutiveErrors, e
	}
	return m
}

// progress writes a line per second to w until the returned func is called.
func progress(w io.Writer, label string, start time.Time, ops, errs *atomic.Int64) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	line := func() {
		s := time.Since(start).Seconds()
		n := ops.Load()
		fmt.Fprintf(w, "\r%-24s %6.1fs %10d ops %9.0f/s %6d errors", label, s, n, float64(n)/s, errs.Load())
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				line()
				fmt.Fprintln(w)
				return
			case <-tick.C:
				line()
			}
		}
	}()
	return func() { close(done); <-finished }
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
