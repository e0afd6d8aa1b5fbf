package loadtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
)

// NewCommand returns `bench`, for dedupctl's root command. dial returns
// the connection to dedupd that dedupctl's global flags describe (server,
// TLS, token), and output the global -o.
func NewCommand(dial func() (grpc.ClientConnInterface, error), output func() string) *cobra.Command {
	var (
		cfg       Config
		scenarios string
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

With --server-pid (dedupd on this machine), and a PostgreSQL on this
machine (found from the baseline database, or --postmaster-pid), the table
also gives the server side's CPU time per operation, read from /proc:
dedupd's share, the database's share, what dedupd's side costs above the floor, and
its ratio to the baseline's (database only). The load generator is not
counted. On a shared machine this ratio holds steady where throughput does
not.

The database's share is, by default, the postmaster's own time plus that of
the backends connected to the bench's database and of the server's shared
helpers (WAL writer, checkpointer...), so other databases' work on a shared
server is left out. --whole-database-server counts the postmaster with all
its children instead, live and reaped (exited backends included): the exact
figure on a server nobody else uses.`,
		Example: `  dedupctl bench --server 127.0.0.1:7070 --duration 20s
  dedupctl bench --baseline-database-url postgres://postgres@127.0.0.1/dedupd -c 32 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scenarios != "" {
				cfg.Scenarios = strings.Split(scenarios, ",")
			}
			conn, err := dial()
			if err != nil {
				return err
			}
			cfg.Conn = conn
			cfg.Progress = cmd.ErrOrStderr()
			report, err := Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if output() == "json" {
				return report.WriteJSON(cmd.OutOrStdout())
			}
			return report.WriteTable(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.BaselineDatabaseURL, "baseline-database-url", "", "PostgreSQL to run the hand-written baseline on (dedupd's own database); empty skips the baseline")
	f.StringVar(&scenarios, "scenarios", strings.Join(Scenarios(), ","), "comma-separated scenarios to run")
	f.IntVarP(&cfg.Concurrency, "concurrency", "c", 32, "concurrent callers")
	f.DurationVarP(&cfg.Duration, "duration", "d", 10*time.Second, "how long each scenario runs on each side")
	f.Int64VarP(&cfg.Count, "count", "n", 0, "operations per scenario and side, instead of --duration")
	f.Float64Var(&cfg.Rate, "rate", 0, "pace operations to this many per second in total (latency then counts from when each was due); 0 runs flat out")
	f.IntVar(&cfg.ReplayKeys, "replay-keys", 1000, "completed keys the replay scenario cycles through")
	f.IntVar(&cfg.ContendedKeys, "contended-keys", 8, "keys the contended scenario shares among all callers")
	f.IntVar(&cfg.ResultBytes, "result-bytes", 64, "size of each stored result")
	f.IntVar(&cfg.BatchSize, "batch-size", 100, "keys per call of the batch scenarios (claim-batch, cycle-batch, replay-batch)")
	f.IntVar(&cfg.ServerPID, "server-pid", 0, "pid of a local dedupd whose peak RSS and CPU time to report")
	f.BoolVar(&cfg.WholeDatabaseServer, "whole-database-server", false, "count every PostgreSQL process as the database's CPU, exited backends included (on a server nobody else uses); by default only the processes serving the bench's database and the shared helpers count")
	f.IntVar(&cfg.PostmasterPID, "postmaster-pid", 0, "pid of the local PostgreSQL postmaster whose CPU time to report; 0 finds it from --baseline-database-url")
	return cmd
}

// scenarioHelp lists the scenarios for --help, one per line.
func scenarioHelp() string {
	var b strings.Builder
	for _, sc := range scenarioTable {
		fmt.Fprintf(&b, "  %-10s %s\n", sc.name, sc.help)
	}
	return b.String()
}
