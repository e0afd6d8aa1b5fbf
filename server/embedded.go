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
// EngineAuto. It is Pebble because Pebble beat SQLite through the whole
// service, by more throughput at about the same CPU per call
// (docs/performance.md, "Issue 30, fourth pass: Pebble the default").
// Existing directories keep the engine they hold.
const DefaultEmbeddedEngine = EnginePebble

// EmbeddedEngine says which engine cfg serves DataDir with: the one
// already there, unless cfg insists on the other, which is an error (the
// records would be hidden, not moved: that is `dedupd migrate-store`).
// A new directory under auto gets DefaultEmbeddedEngine unless cfg asks
// for what only SQLite offers (--embedded-sync normal): then SQLite, the
// engine that can keep that promise, rather than an error the user did
// not cause by naming an engine.
func EmbeddedEngine(cfg Config) (string, error) {
	found, err := datadir.Detect(cfg.DataDir)
	if err != nil {
		return "", err
	}
	engine := cfg.EmbeddedEngine
	switch engine {
	case "", EngineAuto:
		switch {
		case found != datadir.None:
			engine = string(found)
		case cfg.Embedded.Sync != sqlitestore.SyncFull:
			engine = EngineSQLite
		default:
			engine = DefaultEmbeddedEngine
		}
	case EngineSQLite, EnginePebble:
		if found != datadir.None && string(found) != engine {
			return "", fmt.Errorf("data directory %s holds a %s store, not %s; serve it with --embedded-engine %s (or auto), or copy it with `dedupd migrate-store --from %s --to NEWDIR`",
				cfg.DataDir, found, engine, found, cfg.DataDir)
		}
	default:
		return "", fmt.Errorf("--embedded-engine must be auto, sqlite or pebble, not %q", engine)
	}
	// Every Pebble write is synced and shares its fsync through Pebble's
	// commit pipeline: --embedded-sync (and --group-commit) are SQLite's.
	if engine == EnginePebble && cfg.Embedded.Sync != sqlitestore.SyncFull {
		return "", fmt.Errorf("--embedded-sync normal is for the SQLite engine; the Pebble engine syncs every write")
	}
	return engine, nil
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
