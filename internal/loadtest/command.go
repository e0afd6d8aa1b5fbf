package loadtest

import (
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

Scenarios: claim-new (claims of new keys), cycle (claim + complete),
replay (claims of completed keys), contended (all callers on a few keys;
whoever acquires releases), mixed (40% cycle, 40% replay, 10% contended,
10% claim-new), and, a poll of --batch-size keys per call, claim-batch
(ClaimBatch of new keys), cycle-batch (ClaimBatch + FinishBatch) and
replay-batch (ClaimBatch of completed keys: a redelivered poll).

With --baseline-database-url, each scenario runs again by hand on that
PostgreSQL (use dedupd's own database) at the same concurrency: a claim is
the single statement INSERT ... ON CONFLICT DO NOTHING RETURNING on a table
shaped like dedupd's, plus a SELECT by key when the key exists; complete and
release are one fenced UPDATE and DELETE. A batch scenario's baseline is
the raw multi-row INSERT ... ON CONFLICT DO NOTHING RETURNING of the same
batch size (plus a multi-row SELECT of the keys that exist, and one
multi-row fenced UPDATE for the completes). The table prints dedupd's
throughput over the baseline's for each scenario.`,
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
	f.IntVar(&cfg.ServerPID, "server-pid", 0, "pid of a local dedupd whose peak RSS to report")
	return cmd
}
