package loadtest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
)

// NewCommand returns `bench`, for dedupctl's root command. dial returns
// the connection to dedupd that dedupctl's global flags describe (server,
// TLS, token), and output the global -o.
func NewCommand(dial func() (grpc.ClientConnInterface, error), output func() string) *cobra.Command {
	var (
		cfg       Config
		scenarios string
		inProcess string // gone to dedupd bench-engine; kept to say so
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a running dedupd against the SQL you would write by hand",
		Long: `Drive a running dedupd over gRPC with concurrent callers, scenario by
scenario, and report throughput and latency percentiles.

Scenarios:
` + strings.TrimSuffix(scenarioHelp(), "\n") + `

With --baseline-database-url, each scenario runs again by hand on that
PostgreSQL (use dedupd's own database) at the same concurrency: a claim is
the single statement INSERT ... ON CONFLICT DO NOTHING RETURNING on a table
shaped like dedupd's, plus a SELECT by key when the key exists; complete and
release are one fenced UPDATE and DELETE. A batch scenario's baseline is
the raw multi-row INSERT ... ON CONFLICT DO NOTHING RETURNING of the same
batch size (plus a multi-row SELECT of the keys that exist, and one
multi-row fenced UPDATE for the completes); its row shows keys/s and the
server CPU per key. The table prints dedupd's throughput over the
baseline's for each scenario.

With --baseline-redis-url, the scenarios that only claim, complete and
release (claim-new, cycle, replay, contended, mixed) run again on that
Redis at the same concurrency: a claim is SET key PENDING PX lease NX GET
(a new key acquires; an existing one answers its value, so a replay is a
GET), a complete SET key result PX ttl XX, a release DEL. With
--redis-pid (Redis on this machine) its rows give Redis's CPU per
operation, and dedupd's ratios to it. For a fair comparison, give that
Redis appendonly yes and appendfsync always (docs/performance.md): dedupd
syncs every write before it answers. The run's keys are deleted at the end.

With --server-pid (dedupd on this machine), and a PostgreSQL on this
machine (found from the baseline database, or --postmaster-pid), the table
also gives the server side's CPU time per operation, read from /proc:
dedupd's share, the database's share, what dedupd's side costs above the floor, and
its ratio to the baseline's (database only). The load generator is not
counted.

The table fits 100 columns: throughput, errors, p50 and p99, and the CPU
per operation with its ratio to the baseline; -o json has every figure
(p90, max, dedupd's and the database's CPU shares, CPU above the floor,
first and last errors). A progress line is redrawn on stderr only when it
is a terminal.

Failures: a caller whose operation failed backs off (10ms doubling to 1s,
jittered), and the run stops with an error once --max-consecutive-errors
operations in a row have failed, showing what it measured so far.

Cleanup: every run claims under one consumer (--consumer, default
dedupctl-bench; keys carry the run's id), so runs add no consumer label to
the server's metrics, and at the end it purges that consumer's records
(an admin credential is needed; without one it says how to purge them).
Concurrent runs against one server need their own --consumer. The
baseline's table is the run's own (dedupd_bench_baseline_RUNID), dropped
at the end. On a shared machine this ratio holds steady where throughput does
not.

The database's share is, by default, the postmaster's own time plus that of
the backends connected to the bench's database and of the server's shared
helpers (WAL writer, checkpointer...), so other databases' work on a shared
server is left out. --whole-database-server counts the postmaster with all
its children instead, live and reaped (exited backends included): the exact
figure on a server nobody else uses.`,
		Example: `  dedupctl bench --server 127.0.0.1:7070 --duration 20s
  dedupctl bench --baseline-database-url postgres://postgres@127.0.0.1/dedupd -c 32 -o json
  dedupctl bench --scenarios claim-new,replay,cycle --baseline-redis-url redis://127.0.0.1:6390 --redis-pid 4242`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if inProcess != "" {
				return fmt.Errorf("--in-process: dedupctl links no storage engine; run `dedupd bench-engine --engine %s` instead", inProcess)
			}
			conn, err := dial()
			if err != nil {
				return err
			}
			cfg.Conn = conn
			return RunAndReport(cmd, cfg, scenarios, output())
		},
	}
	f := cmd.Flags()
	AddRunFlags(f, &cfg, &scenarios)
	f.StringVar(&cfg.BaselineDatabaseURL, "baseline-database-url", "", "PostgreSQL to run the hand-written baseline on (dedupd's own database); empty skips the baseline")
	f.StringVar(&cfg.BaselineRedisURL, "baseline-redis-url", "", "Redis to run the key scenarios on as well (SET NX, SET XX), e.g. redis://127.0.0.1:6390; empty skips it")
	f.IntVar(&cfg.BatchSize, "batch-size", 100, "keys per call of the batch scenarios (claim-batch, cycle-batch, replay-batch)")
	f.IntVar(&cfg.ServerPID, "server-pid", 0, "pid of a local dedupd whose peak RSS and CPU time to report")
	f.IntVar(&cfg.RedisPID, "redis-pid", 0, "pid of the local Redis of --baseline-redis-url whose CPU time to report")
	f.BoolVar(&cfg.WholeDatabaseServer, "whole-database-server", false, "count every PostgreSQL process as the database's CPU, exited backends included (on a server nobody else uses); by default only the processes serving the bench's database and the shared helpers count")
	f.IntVar(&cfg.MaxConsecutiveErrors, "max-consecutive-errors", 100, "stop when this many operations in a row have failed (each failed caller also backs off, 10ms doubling to 1s)")
	f.StringVar(&cfg.Consumer, "consumer", BenchConsumer, "consumer to claim under; its records are purged at the end (give concurrent runs against one server their own)")
	f.BoolVar(&cfg.KeepRecords, "keep-records", false, "leave the run's records on the server (and its keys on the baseline Redis) instead of deleting them at the end")
	f.StringVar(&inProcess, "in-process", "", "moved: dedupd bench-engine --engine ENGINE")
	_ = f.MarkHidden("in-process") // it exists
	f.IntVar(&cfg.PostmasterPID, "postmaster-pid", 0, "pid of the local PostgreSQL postmaster whose CPU time to report; 0 finds it from --baseline-database-url")
	return cmd
}

// AddRunFlags adds the flags of what a run does (scenarios, callers,
// length, pace, keys, result size) to f, for `dedupctl bench` and for
// tools that drive an engine in process with the same scenarios.
func AddRunFlags(f *pflag.FlagSet, cfg *Config, scenarios *string) {
	f.StringVar(scenarios, "scenarios", "", "comma-separated scenarios to run; empty runs all that apply")
	f.IntVarP(&cfg.Concurrency, "concurrency", "c", 32, "concurrent callers")
	f.DurationVarP(&cfg.Duration, "duration", "d", 10*time.Second, "how long each scenario runs on each side")
	f.Int64VarP(&cfg.Count, "count", "n", 0, "operations per scenario and side, instead of --duration")
	f.Float64Var(&cfg.Rate, "rate", 0, "pace operations to this many per second in total (latency then counts from when each was due); 0 runs flat out")
	f.IntVar(&cfg.ReplayKeys, "replay-keys", 1000, "completed keys the replay scenario cycles through")
	f.IntVar(&cfg.ContendedKeys, "contended-keys", 8, "keys the contended scenario shares among all callers")
	f.IntVar(&cfg.ResultBytes, "result-bytes", 64, "size of each stored result")
}

// RunAndReport runs cfg with the scenarios named (comma-separated; empty
// for the default) and writes the report to cmd's output as output (the
// global -o) asks, also when the run gave up; progress goes to stderr when
// it is a terminal.
func RunAndReport(cmd *cobra.Command, cfg Config, scenarios, output string) error {
	if scenarios != "" {
		cfg.Scenarios = strings.Split(scenarios, ",")
	}
	if onTerminal(cmd.ErrOrStderr()) {
		cfg.Progress = cmd.ErrOrStderr()
	}
	report, err := Run(cmd.Context(), cfg)
	if report.Scenarios != nil {
		// What was measured is shown, also when the run gave up.
		if werr := writeReport(cmd.OutOrStdout(), report, output); err == nil {
			err = werr
		}
	}
	if report.CleanupNote != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", report.CleanupNote)
	}
	return err
}

// writeReport writes the report as the global -o asks.
func writeReport(w io.Writer, report Report, output string) error {
	if output == "json" {
		return report.WriteJSON(w)
	}
	return report.WriteTable(w)
}

// onTerminal reports whether w is a terminal: progress lines are redrawn
// with \r, which a log or a pipe should not get.
func onTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// scenarioHelp lists the scenarios for --help, one per line.
func scenarioHelp() string {
	var b strings.Builder
	for _, sc := range scenarioTable {
		fmt.Fprintf(&b, "  %-10s %s\n", sc.name, sc.help)
	}
	return b.String()
}
