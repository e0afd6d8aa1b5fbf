package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

func TestEmbeddedEngine(t *testing.T) {
	for _, tc := range []struct {
		name, holds, asked string
		sync               sqlitestore.Sync
		want, err          string
	}{
		// Spelled out rather than DefaultEmbeddedEngine, so that a change
		// of the default is a change of this table too.
		{"new directory, auto", "", EngineAuto, sqlitestore.SyncFull, EnginePebble, ""},
		{"new directory, empty flag", "", "", sqlitestore.SyncFull, EnginePebble, ""},
		{"new directory, auto, sync normal", "", EngineAuto, sqlitestore.SyncNormal, EngineSQLite, ""},
		{"new directory, pebble", "", EnginePebble, sqlitestore.SyncFull, EnginePebble, ""},
		{"new directory, sqlite", "", EngineSQLite, sqlitestore.SyncFull, EngineSQLite, ""},
		{"sqlite directory, auto", "dedup.db", EngineAuto, sqlitestore.SyncFull, EngineSQLite, ""},
		{"pebble directory, auto", "pebble/", EngineAuto, sqlitestore.SyncFull, EnginePebble, ""},
		{"pebble directory, auto, sync normal", "pebble/", EngineAuto, sqlitestore.SyncNormal, EnginePebble, ""},
		{"sqlite directory, pebble asked", "dedup.db", EnginePebble, sqlitestore.SyncFull, "", "holds a sqlite store, not pebble"},
		{"pebble directory, sqlite asked", "pebble/", EngineSQLite, sqlitestore.SyncFull, "", "holds a pebble store, not sqlite"},
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
			got, err := EmbeddedEngine(Config{DataDir: dir, EmbeddedEngine: tc.asked, Embedded: sqlitestore.Options{Sync: tc.sync}})
			if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("EmbeddedEngine = %q, %v; want %q and an error containing %q", got, err, tc.want, tc.err)
			}
		})
	}
}
