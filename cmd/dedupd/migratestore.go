package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/dedupd/dedupd/internal/datadir"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storecopy"
)

func newMigrateStoreCommand() *cobra.Command {
	var from, to string
	var chunk int
	var logs logFlags
	cmd := &cobra.Command{
		Use:   "migrate-store",
		Short: "Copy an embedded SQLite store into a new Pebble store, verified",
		Long: `Copy every record, stream, parked event and policy of the SQLite store in --from into a
new Pebble store in --to, row for row (expired rows too: their fencing
tokens still count), then read both back and compare their counts and a
digest of every row. Only then is --to marked finished; until it is,
'dedupd serve' refuses to serve it.

Stop the server first: the copy holds --from's lock, so no write can slip
past it. An interrupted copy (kill, full disk) resumes where it stopped
when run again with the same flags. --from is never changed; once the copy
is verified, serve --to (docs/operations.md, "Moving a SQLite directory to
Pebble").

A new data directory is Pebble's; a directory an older dedupd made (or one
created with --embedded-engine sqlite or --embedded-sync normal) holds
SQLite and keeps it until copied with this command.`,
		Example: `  dedupd migrate-store --from /var/lib/dedupd --to /var/lib/dedupd-pebble`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logs.logger()
			if err != nil {
				return err
			}
			if from == "" || to == "" {
				return errors.New("--from and --to are required")
			}
			if engine, err := datadir.Detect(from); err != nil {
				return err
			} else if engine != datadir.SQLite {
				return fmt.Errorf("--from %s holds no SQLite store (%s)", from, datadir.SQLiteFile)
			}
			source, err := filepath.Abs(from)
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			src, err := sqlitestore.Open(ctx, from, sqlitestore.Options{})
			if err != nil {
				return fmt.Errorf("opening --from (is its server still running?): %w", err)
			}
			defer src.Close()
			dst, err := pebblestore.OpenForCopy(ctx, to)
			if err != nil {
				return fmt.Errorf("opening --to: %w", err)
			}
			defer dst.Close()
			sum, err := storecopy.Copy(ctx, src, dst, source, chunk, log)
			if err != nil {
				return err
			}
			log.Info("copy verified", "records", sum.Records, "streams", sum.Streams, "parked_events", sum.Parked,
				"policies", sum.Policies, "stream_policies", sum.StreamPolicies, "sha256", sum.Digest)
			fmt.Fprintf(os.Stdout, "copied and verified %d records, %d streams, %d parked events, %d policies, %d stream policies (sha256 %s)\nserve it with: dedupd serve --data-dir %s\n",
				sum.Records, sum.Streams, sum.Parked, sum.Policies, sum.StreamPolicies, sum.Digest, to)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "data directory of the SQLite store to copy (left unchanged)")
	f.StringVar(&to, "to", "", "new data directory for the Pebble copy (or the one an interrupted copy left)")
	f.IntVar(&chunk, "chunk", storecopy.DefaultChunk, "rows per committed chunk")
	logs.register(f)
	return cmd
}
