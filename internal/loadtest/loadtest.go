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
	"os"
	"strings"
)

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

// newRunID names one run: its keys, its consumer's records and its
// baseline table carry it, so that concurrent runs never collide.
func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
