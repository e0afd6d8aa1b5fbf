package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// TestEmbeddedEngine walks every directory (new, SQLite's, Pebble's) under
// every --embedded-engine and --embedded-sync. The expectations are
// written out by hand, not derived from the constants under test: a new
// directory is Pebble's unless it asks for sync normal, which only SQLite
// offers; a directory keeps its engine; Pebble never runs with sync normal.
func TestEmbeddedEngine(t *testing.T) {
	const (
		wrongSync   = "--embedded-sync normal is for the SQLite engine"
		sqliteFound = "holds a sqlite store, not pebble"
		pebbleFound = "holds a pebble store, not sqlite"
	)
	for _, tc := range []struct {
		name, holds, asked string
		sync               sqlitestore.Sync
		want, err          string
	}{
		{"new directory, auto, full", "", "auto", sqlitestore.SyncFull, "pebble", ""},
		{"new directory, auto, normal", "", "auto", sqlitestore.SyncNormal, "sqlite", ""},
		{"new directory, sqlite, full", "", "sqlite", sqlitestore.SyncFull, "sqlite", ""},
		{"new directory, sqlite, normal", "", "sqlite", sqlitestore.SyncNormal, "sqlite", ""},
		{"new directory, pebble, full", "", "pebble", sqlitestore.SyncFull, "pebble", ""},
		{"new directory, pebble, normal", "", "pebble", sqlitestore.SyncNormal, "", wrongSync},

		{"sqlite directory, auto, full", "dedup.db", "auto", sqlitestore.SyncFull, "sqlite", ""},
		{"sqlite directory, auto, normal", "dedup.db", "auto", sqlitestore.SyncNormal, "sqlite", ""},
		{"sqlite directory, sqlite, full", "dedup.db", "sqlite", sqlitestore.SyncFull, "sqlite", ""},
		{"sqlite directory, sqlite, normal", "dedup.db", "sqlite", sqlitestore.SyncNormal, "sqlite", ""},
		{"sqlite directory, pebble, full", "dedup.db", "pebble", sqlitestore.SyncFull, "", sqliteFound},
		{"sqlite directory, pebble, normal", "dedup.db", "pebble", sqlitestore.SyncNormal, "", sqliteFound},

		{"pebble directory, auto, full", "pebble/", "auto", sqlitestore.SyncFull, "pebble", ""},
		{"pebble directory, auto, normal", "pebble/", "auto", sqlitestore.SyncNormal, "", wrongSync},
		{"pebble directory, sqlite, full", "pebble/", "sqlite", sqlitestore.SyncFull, "", pebbleFound},
		{"pebble directory, sqlite, normal", "pebble/", "sqlite", sqlitestore.SyncNormal, "", pebbleFound},
		{"pebble directory, pebble, full", "pebble/", "pebble", sqlitestore.SyncFull, "pebble", ""},
		{"pebble directory, pebble, normal", "pebble/", "pebble", sqlitestore.SyncNormal, "", wrongSync},

		// An unset engine is auto.
		{"new directory, empty flag, full", "", "", sqlitestore.SyncFull, "pebble", ""},
		{"new directory, empty flag, normal", "", "", sqlitestore.SyncNormal, "sqlite", ""},
		{"unknown engine", "", "rocksdb", sqlitestore.SyncFull, "", "must be auto, sqlite or pebble"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			switch {
			case strings.HasSuffix(tc.holds, "/"):
				if err := os.Mkdir(filepath.Join(dir, tc.holds), 0o700); err != nil {
					t.Fatal(err)
				}
			case tc.holds != "":
				if err := os.WriteFile(filepath.Join(dir, tc.holds), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg := Config{DataDir: dir, EmbeddedEngine: tc.asked}
			cfg.Embedded.Sync = tc.sync
			got, err := EmbeddedEngine(cfg)
			if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("EmbeddedEngine = %q, %v; want %q and an error containing %q", got, err, tc.want, tc.err)
			}
		})
	}
}
