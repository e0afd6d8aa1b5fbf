package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/dedupd/dedupd/server"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

func newMigrateCommand() *cobra.Command {
	var databaseURL, dataDir, engine string
	var cockroachTTL bool
	var logs logFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring the store's schema to the current version",
		Long: `Apply every migration the store has not applied yet. Running it again is a
no-op, and it may run while servers are up; run one at a time. On
PostgreSQL, migration 2001 rebuilds the table's indexes under an exclusive
lock (docs/operations.md).

With --database-url it migrates PostgreSQL or CockroachDB; without it, the
embedded store in --data-dir (which also migrates itself at start); a new
directory gets the engine --embedded-engine names, as with serve.

With --cockroachdb-ttl it then applies the optional CockroachDB-only step:
row-level TTL on expires_at in place of the reaper, and a hash-sharded
expiry index (docs/cockroachdb.md); serve with --reaper=off afterwards. It
refuses any database that is not CockroachDB, PostgreSQL included.`,
		Example: `  dedupd migrate --database-url postgres://dedupd@db:5432/dedupd
  DEDUPD_DATABASE_URL=postgres://dedupd@db:5432/dedupd dedupd migrate
  dedupd migrate --database-url postgresql://dedupd@crdb:26257/dedupd --cockroachdb-ttl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logs.logger()
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			if cockroachTTL {
				return migrateCockroachDBTTL(ctx, databaseURL, log)
			}
			if databaseURL != "" {
				return server.Migrate(ctx, databaseURL, log)
			}
			return migrateEmbedded(ctx, server.Config{DataDir: dataDir, EmbeddedEngine: engine}, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&databaseURL, "database-url", "", "PostgreSQL or CockroachDB URL")
	f.StringVar(&dataDir, "data-dir", "dedupd-data", "directory of the embedded store")
	f.StringVar(&engine, "embedded-engine", server.EngineAuto, "engine of the embedded store: auto (the one already in --data-dir; a new directory gets "+server.DefaultEmbeddedEngine+"), sqlite or pebble")
	f.BoolVar(&cockroachTTL, "cockroachdb-ttl", false, "also apply the optional CockroachDB-only migrations: row-level TTL instead of the reaper, hash-sharded expiry index")
	logs.register(f)
	return cmd
}

func migrateEmbedded(ctx context.Context, cfg server.Config, log *slog.Logger) error {
	st, err := server.OpenStore(ctx, cfg, log, server.StoreHooks{})
	if err != nil {
		return err
	}
	return st.Close()
}

// migrateCockroachDBTTL brings the portable schema to head, then applies the
// CockroachDB-only set. The database is checked before anything is applied.
func migrateCockroachDBTTL(ctx context.Context, databaseURL string, log *slog.Logger) error {
	if databaseURL == "" {
		return errors.New("--cockroachdb-ttl needs --database-url (a CockroachDB cluster)")
	}
	st, err := pgstore.Open(ctx, databaseURL, pgstore.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CheckCockroachDB(ctx); err != nil {
		return err
	}
	if err := server.Migrate(ctx, databaseURL, log); err != nil {
		return err
	}
	applied, err := st.MigrateCockroachDBTTL(ctx)
	if err != nil {
		return err
	}
	for _, m := range applied {
		log.Info("applied CockroachDB migration", "migration", m.String())
	}
	if len(applied) == 0 {
		log.Info("CockroachDB row-level TTL already applied")
	}
	log.Info("serve with --reaper=off: the TTL job deletes expired records")
	return nil
}
