package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/replaycache"
)

// withReplayCache puts the replay cache in front of st when it is on.
func withReplayCache(st store.Backend, cfg Config) store.Backend {
	if cfg.ReplayCacheBytes <= 0 {
		return st
	}
	return replaycache.New(st, replaycache.Options{MaxBytes: cfg.ReplayCacheBytes, TTL: cfg.ReplayCacheTTL})
}

// OpenStore opens the store the configuration selects. The embedded store
// migrates itself; a shared database must already be at the head of its
// migrations (`dedupd migrate`), because several servers may share it and
// schema changes there are an operator's decision. onRetry, when not nil,
// is told of every retried attempt on a shared database (for metrics).
func OpenStore(ctx context.Context, cfg Config, log *slog.Logger, onRetry func(op string)) (store.Backend, error) {
	if cfg.DatabaseURL == "" {
		return openEmbedded(ctx, cfg, log)
	}
	if err := checkDatabaseURL(cfg.DatabaseURL); err != nil {
		return nil, err
	}
	opts := pgstore.Options{OnRetry: onRetry}
	if !cfg.GroupCommit {
		opts.MaxBatch = 1
	}
	st, err := pgstore.Open(ctx, cfg.DatabaseURL, opts)
	if err != nil {
		return nil, fmt.Errorf("opening database: %w", err)
	}
	pending, err := st.PendingMigrations(ctx)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("checking database schema: %w", err)
	}
	if len(pending) > 0 {
		st.Close()
		return nil, fmt.Errorf("database schema is %d migration(s) behind (next: %s); run `dedupd migrate` first",
			len(pending), pending[0])
	}
	return st, nil
}

// Migrate brings a shared database to the head of its migrations.
func Migrate(ctx context.Context, databaseURL string, log *slog.Logger) error {
	if err := checkDatabaseURL(databaseURL); err != nil {
		return err
	}
	st, err := pgstore.Open(ctx, databaseURL, pgstore.Options{})
	if err != nil {
		return fmt.Errorf("opening database: %w", err)
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	for _, m := range applied {
		log.Info("applied migration", "migration", m.String())
	}
	if len(applied) == 0 {
		log.Info("database schema already at head")
	}
	return nil
}
