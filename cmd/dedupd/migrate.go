package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/dedupd/dedupd/server"
)

func newMigrateCommand() *cobra.Command {
	var databaseURL, dataDir string
	var logs logFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring the store's schema to the current version",
		Long: `Apply every migration the store has not applied yet. Running it again is a
no-op, and it is safe to run while servers are up: migrations only add.

With --database-url it migrates PostgreSQL or CockroachDB; without it, the
embedded store in --data-dir (which also migrates itself at start).`,
		Example: `  dedupd migrate --database-url postgres://dedupd@db:5432/dedupd
  DEDUPD_DATABASE_URL=postgres://dedupd@db:5432/dedupd dedupd migrate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logs.logger()
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			if databaseURL != "" {
				return server.Migrate(ctx, databaseURL, log)
			}
			return migrateEmbedded(ctx, dataDir, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&databaseURL, "database-url", "", "PostgreSQL or CockroachDB URL")
	f.StringVar(&dataDir, "data-dir", "dedupd-data", "directory of the embedded store")
	logs.register(f)
	return cmd
}

func migrateEmbedded(ctx context.Context, dataDir string, log *slog.Logger) error {
	st, err := server.OpenStore(ctx, server.Config{DataDir: dataDir}, log)
	if err != nil {
		return err
	}
	return st.Close()
}
