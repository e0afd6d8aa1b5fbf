package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string // created in the directory; a trailing / makes a directory
		want  Engine
		err   string
	}{
		{"absent directory", nil, None, ""},
		{"empty", []string{}, None, ""},
		{"sqlite", []string{SQLiteFile, LockFileName}, SQLite, ""},
		{"pebble", []string{PebbleDir + "/", LockFileName}, Pebble, ""},
		{"both", []string{SQLiteFile, PebbleDir + "/"}, None, "holds both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if tc.files != nil {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.files {
				var err error
				if strings.HasSuffix(f, "/") {
					err = os.Mkdir(filepath.Join(dir, f), 0o700)
				} else {
					err = os.WriteFile(filepath.Join(dir, f), nil, 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := Detect(dir)
			if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Detect = %q, %v; want %q and an error containing %q", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	l, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Lock: %v, want ErrLocked naming %s", err, dir)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l, err = Lock(dir)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}
