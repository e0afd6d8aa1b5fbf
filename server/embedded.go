package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dedupd/dedupd/internal/datadir"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// The embedded engines, as --embedded-engine names them.
const (
	EngineAuto   = "auto"
	EngineSQLite = string(datadir.SQLite)
	EnginePebble = string(datadir.Pebble)
)

// DefaultEmbeddedEngine is the engine of a new data directory under
// EngineAuto. It stays SQLite until Pebble beats it through the whole
// service by the margins of issue 21 (docs/performance.md, "Embedded
// stores").
const DefaultEmbeddedEngine = EngineSQLite

// EmbeddedEngine says which engine cfg serves DataDir with: the one
// already there, unless cfg insists on the other, which is an error (the
// records would be hidden, not moved: that is `dedupd migrate-store`).
func EmbeddedEngine(cfg Config) (string, error) {
	found, err := datadir.Detect(cfg.DataDir)
	if err != nil {
		return "", err
	}
	want := cfg.EmbeddedEngine
	switch want {
	case "", EngineAuto:
		if found != datadir.None {
			return string(found), nil
		}
		return DefaultEmbeddedEngine, nil
	case EngineSQLite, EnginePebble:
		if found != datadir.None && string(found) != want {
			return "", fmt.Errorf("data directory %s holds a %s store, not %s; serve it with --embedded-engine %s (or auto), or copy it with `dedupd migrate-store --from %s --to NEWDIR`",
				cfg.DataDir, found, want, found, cfg.DataDir)
		}
		return want, nil
	}
	return "", fmt.Errorf("--embedded-engine must be auto, sqlite or pebble, not %q", want)
}

// openEmbedded opens the embedded store in cfg.DataDir on the engine
// EmbeddedEngine chooses, recording its commits into commits (nil: none).
func openEmbedded(ctx context.Context, cfg Config, log *slog.Logger, commits *commitmetrics.Set) (store.Engine, error) {
	engine, err := EmbeddedEngine(cfg)
	if err != nil {
		return nil, fmt.Errorf("opening embedded store: %w", err)
	}
	var st store.Engine
	switch engine {
	case EnginePebble:
		// Every Pebble write is synced and shares its fsync through
		// Pebble's commit pipeline: --embedded-sync and --group-commit
		// are SQLite's.
		if cfg.Embedded.Sync != sqlitestore.SyncFull {
			return nil, fmt.Errorf("opening embedded store: --embedded-sync normal is for the SQLite engine; the Pebble engine syncs every write")
		}
		st, err = pebblestore.Open(ctx, cfg.DataDir, pebblestore.Options{Commits: commits.For(commitmetrics.StorePebble, true)})
	default:
		opts := cfg.Embedded
		opts.Commits = commits.For(commitmetrics.StoreSQLite, opts.Sync == sqlitestore.SyncFull)
		if !cfg.GroupCommit {
			opts.MaxBatch = 1
		}
		st, err = sqlitestore.Open(ctx, cfg.DataDir, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("opening embedded store: %w", err)
	}
	log.Info("embedded store open", "data_dir", cfg.DataDir, "engine", engine)
	return st, nil
}
