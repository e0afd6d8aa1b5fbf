package enginebench

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dedupd/dedupd/internal/loadtest"
)

// NewCommand returns `bench-engine`, for dedupd's root command.
func NewCommand() *cobra.Command {
	var (
		cfg               loadtest.Config
		engine, dir       string
		scenarios, output string
	)
	cmd := &cobra.Command{
		Use:   "bench-engine",
		Short: "Measure an embedded storage engine in this process, without gRPC: the floor under dedupd's cost",
		Long: `Open a fresh store of an embedded engine (sqlite or pebble) and drive it in
this process with dedupctl bench's scenarios, callers and keys, with no
gRPC, no server and no handler in between: the engine limit. Its CPU per
operation is this process's (the callers' loop is a few percent of it), so
that dedupd's, from dedupctl bench --server-pid, can be read against it.

Only the scenarios that claim, complete and release run here (claim-new,
cycle, replay, contended, mixed); the batch and stream ones need the
service's calls. Put --dir on the disk dedupd's data is on: the engines
sync every acknowledged write, so the disk sets the rate.`,
		Example: `  dedupd bench-engine --engine pebble --dir /var/lib/dedupd-bench --scenarios claim-new,cycle -c 32 -d 10s
  dedupd bench-engine --engine sqlite -n 100000 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: want text or json", output)
			}
			e, err := Open(cmd.Context(), engine, dir, cfg.ResultBytes)
			if err != nil {
				return err
			}
			defer e.Close()
			cfg.Direct = e
			return loadtest.RunAndReport(cmd, cfg, scenarios, output)
		},
	}
	f := cmd.Flags()
	loadtest.AddRunFlags(f, &cfg, &scenarios)
	f.StringVar(&engine, "engine", "sqlite", "embedded engine to open: "+strings.Join(Engines, " or "))
	f.StringVar(&dir, "dir", "", "directory for the fresh store (on the disk dedupd's data is on); empty uses a temporary one, removed at the end")
	f.StringVarP(&output, "output", "o", "text", "report format: text or json")
	return cmd
}
