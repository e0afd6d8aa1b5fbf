// Package loadtest is `dedupctl bench`: it drives a running dedupd over gRPC
// with concurrent callers, scenario by scenario, and measures beside it the
// SQL a user would write by hand instead of running dedupd, against the same
// PostgreSQL, at the same concurrency, so that every number comes with the
// bar it must clear; with a Redis, also the SET NX a team would use instead
// (redis.go). It links no storage engine: `dedupd bench-engine` (package
// enginebench) drives an engine in process through Direct instead.
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
	svc, closeSvc, err := openServiceSide(cfg, runID, &report)
	if err != nil {
		return Report{}, err
	}
	defer closeSvc()
	var sides baselines
	if cfg.BaselineDatabaseURL != "" {
		if sides.pg, err = openBaseline(ctx, cfg, runID); err != nil {
			return Report{}, err
		}
		defer sides.pg.close()
	}
	if cfg.BaselineRedisURL != "" {
		if sides.redis, err = openRedis(ctx, cfg, runID); err != nil {
			return Report{}, err
		}
		defer sides.redis.close()
	}
	report.Baseline, report.Redis = sides.pg != nil, sides.redis != nil
	if cfg.Direct != nil {
		cfg.ServerPID = os.Getpid()
	}
	cpu := newCPUSampler(ctx, cfg, sides, &report)
	for _, name := range cfg.Scenarios {
		sr, err := runScenario(ctx, cfg, name, svc, sides, cpu)
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

// openServiceSide opens the side every scenario runs on: dedupd over gRPC,
// or cfg.Direct in this process. closeSide cleans up after the run.
func openServiceSide(cfg Config, runID string, report *Report) (svc operator, closeSide func(), err error) {
	if d := cfg.Direct; d != nil {
		ds := &directSide{Direct: d}
		ds.scenarios = newScenarios(ds, cfg)
		report.Addr = "in process: " + d.Name()
		report.CPUNote = fmt.Sprintf("in process: the dedupd rows are the %s driven in this process, without gRPC; "+
			"their CPU is this process's, the callers' loop included.", d.Name())
		return ds, func() {}, nil
	}
	dialed, err := dialService(cfg, runID)
	if err != nil {
		return nil, nil, err
	}
	return dialed, func() {
		if !cfg.KeepRecords {
			dialed.cleanup(report)
		}
		dialed.close()
	}, nil
}

// baselines are the sides a scenario is compared with; nil when not run.
type baselines struct {
	pg    *baseline
	redis *redisBaseline
}

// operator sets up a scenario's operation on one side: dedupd, the
// in-process engine (direct.go), or a baseline.
type operator interface {
	operation(ctx context.Context, name string) (operation, error)
}

func runScenario(ctx context.Context, cfg Config, name string, svc operator, sides baselines, cpu *cpuSampler) (ScenarioReport, error) {
	sc, _ := scenarioNamed(name)
	sr := ScenarioReport{Name: name, KeysPerOp: 1}
	if sc.batch {
		sr.KeysPerOp = cfg.BatchSize
	}
	op, err := svc.operation(ctx, name)
	if err != nil {
		return sr, fmt.Errorf("loadtest: setting up %s on dedupd: %w", name, err)
	}
	sr.Service = measureCPU(ctx, cfg, name+" dedupd", op, cpu, dedupdAndDatabase)
	if err := sr.Service.gaveUp(name, "dedupd"); err != nil {
		return sr, err
	}
	if sides.pg != nil && !sc.serviceOnly {
		if sr.Baseline, err = compare(ctx, cfg, name, "baseline", sides.pg, cpu, databaseOnly); err != nil {
			return sr, err
		}
		sr.Ratio, sr.CPURatio = ratios(sr.Service, *sr.Baseline)
	}
	if sides.redis != nil && sc.keysOnly {
		if sr.Redis, err = compare(ctx, cfg, name, "redis", sides.redis, cpu, redisOnly); err != nil {
			return sr, err
		}
		sr.RedisRatio, sr.RedisCPURatio = ratios(sr.Service, *sr.Redis)
	}
	return sr, ctx.Err()
}

// compare runs scenario name on a baseline side, after dedupd.
func compare(ctx context.Context, cfg Config, name, label string, side operator, cpu *cpuSampler, counted share) (*Measurement, error) {
	op, err := side.operation(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("loadtest: setting up %s on %s: %w", name, label, err)
	}
	m := measureCPU(ctx, cfg, name+" "+label, op, cpu, counted)
	return &m, m.gaveUp(name, "the "+label)
}

// measureCPU is measure, with the server side's CPU time per operation
// when a sampler is given; counted says whose CPU is the side's.
func measureCPU(ctx context.Context, cfg Config, label string, op operation, cpu *cpuSampler, counted share) Measurement {
	if cpu == nil {
		return measure(ctx, cfg, label, op)
	}
	before, errBefore := cpu.sample()
	m := measure(ctx, cfg, label, op)
	after, errAfter := cpu.sample()
	if errBefore == nil && errAfter == nil {
		m.CPU = perOp(before, after, m.Ops+m.Errors, counted)
	}
	return m
}

// newCPUSampler returns the sampler of the server side's CPU time, or nil
// when there is nothing local to sample; it says in the report what it
// samples, or why the database is left out.
func newCPUSampler(ctx context.Context, cfg Config, sides baselines, report *Report) *cpuSampler {
	s := &cpuSampler{proc: "/proc", dedupdPID: cfg.ServerPID, postmasterPID: cfg.PostmasterPID, redisPID: cfg.RedisPID}
	var notes []string
	if s.postmasterPID == 0 && sides.pg != nil {
		pid, err := findPostmaster(ctx, sides.pg.pool, s.proc)
		if err != nil {
			notes = append(notes, fmt.Sprintf("database CPU not measured: %v.", err))
		}
		s.postmasterPID = pid
	}
	if sides.pg != nil && !cfg.WholeDatabaseServer {
		s.databasePIDs = runDatabasePIDs(ctx, sides.pg.pool)
	}
	if sides.redis != nil && s.redisPID > 0 {
		if note := sides.redis.checkPID(ctx, s.redisPID); note != "" {
			notes = append(notes, note)
		}
	}
	report.WholeDatabaseServer = s.postmasterPID > 0 && s.databasePIDs == nil
	defer func() { report.CPUNote = strings.TrimSpace(report.CPUNote + " " + strings.Join(notes, " ")) }()
	if s.dedupdPID == 0 && s.postmasterPID == 0 && s.redisPID == 0 {
		return nil
	}
	if _, err := s.sample(); err != nil {
		notes = append(notes, fmt.Sprintf("server CPU not measured: %v.", err))
		return nil
	}
	report.DedupdPID, report.PostmasterPID, report.RedisPID = s.dedupdPID, s.postmasterPID, s.redisPID
	return s
}

// newRunID names one run: its keys, its consumer's records and its
// baseline table carry it, so that concurrent runs never collide.
func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
