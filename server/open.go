package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/replaycache"
	"github.com/dedupd/dedupd/server/store/stack"
)

// storeStack is the decorator stack cfg asks for (see stack.Build): the
// replay cache when it is on, the store metrics (telling onOutcome, when
// set, of each counted operation's outcome) and tracing when a tracer
// provider is set, and the claim-wait notification of waits when waiting
// is on. The server and its tests build the store through it.
func storeStack(cfg Config, m *metrics.Metrics, onOutcome func(op string, err error), waits *claimwait.Registry) stack.Options {
	o := stack.Options{Observe: m.StoreCounters(onOutcome)}
	o.Observe.Tracer = cfg.TracerProvider
	if cfg.ReplayCacheBytes > 0 {
		o.Cache = replaycache.Options{MaxBytes: cfg.ReplayCacheBytes, TTL: cfg.ReplayCacheTTL}
	}
	if waits.On() {
		o.Wake = waits
	}
	return o
}

// StoreHooks are what a store reports to the server's metrics; the zero
// value reports nothing.
type StoreHooks struct {
	// OnRetry, when not nil, is told of every retried attempt on a shared
	// database.
	OnRetry func(op string)
	// Commits, when not nil, is where the store records its commits.
	Commits *commitmetrics.Set
}

// OpenStore opens the store the configuration selects. The embedded store
// migrates itself; a shared database must already be at the head of its
// migrations (`dedupd migrate`), because several servers may share it and
// schema changes there are an operator's decision.
func OpenStore(ctx context.Context, cfg Config, log *slog.Logger, hooks StoreHooks) (store.Engine, error) {
	if cfg.DatabaseURL == "" {
		return openEmbedded(ctx, cfg, log, hooks.Commits)
	}
	if err := checkDatabaseURL(cfg.DatabaseURL); err != nil {
		return nil, err
	}
	opts := pgstore.Options{OnRetry: hooks.OnRetry, Commits: hooks.Commits.For(commitmetrics.StorePostgres, false)}
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
