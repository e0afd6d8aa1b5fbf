package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEmbeddedEngine(t *testing.T) {
	for _, tc := range []struct {
		name, holds, asked, want, err string
	}{
		{"new directory, auto", "", EngineAuto, DefaultEmbeddedEngine, ""},
		{"new directory, empty flag", "", "", DefaultEmbeddedEngine, ""},
		{"new directory, pebble", "", EnginePebble, EnginePebble, ""},
		{"sqlite directory, auto", "dedup.db", EngineAuto, EngineSQLite, ""},
		{"pebble directory, auto", "pebble/", EngineAuto, EnginePebble, ""},
		{"sqlite directory, pebble asked", "dedup.db", EnginePebble, "", "holds a sqlite store, not pebble"},
		{"pebble directory, sqlite asked", "pebble/", EngineSQLite, "", "holds a pebble store, not sqlite"},
		{"unknown engine", "", "rocksdb", "", "must be auto, sqlite or pebble"},
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
			got, err := EmbeddedEngine(Config{DataDir: dir, EmbeddedEngine: tc.asked})
			if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("EmbeddedEngine = %q, %v; want %q and an error containing %q", got, err, tc.want, tc.err)
			}
		})
	}
}
