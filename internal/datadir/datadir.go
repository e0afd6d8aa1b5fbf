// Package datadir is what the embedded stores share about their data
// directory: the exclusive lock that keeps a second dedupd off it, and how
// to tell which engine's files it holds.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// ErrLocked is returned when another process, or another store in this one,
// holds the data directory.
var ErrLocked = errors.New("data directory is in use by another dedupd process")

// lockedError names the directory in the message while matching ErrLocked.
type lockedError struct{ dir string }

func (e *lockedError) Error() string {
	return "data directory " + e.dir + " is in use by another dedupd process"
}

func (e *lockedError) Unwrap() error { return ErrLocked }

// LockFileName is the lock file every embedded store takes in its data
// directory, whatever its engine, so that two engines can never run on one
// directory at once either.
const LockFileName = "LOCK"

// Lock takes the directory's lock without waiting: a second server on the
// same data would break the single-process and local-clock assumptions of
// the embedded stores, so it must fail loudly rather than queue. The error
// of a held lock matches ErrLocked; what says "which store" is the caller's
// prefix.
func Lock(dir string) (*flock.Flock, error) {
	lock := flock.New(filepath.Join(dir, LockFileName))
	ok, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking data directory %s: %w", dir, err)
	}
	if !ok {
		return nil, &lockedError{dir: dir}
	}
	return lock, nil
}

// Engine names the embedded engines a data directory can hold.
type Engine string

const (
	// None: the directory is absent or holds neither engine's files.
	None Engine = ""
	// SQLite: the directory holds SQLiteFile.
	SQLite Engine = "sqlite"
	// Pebble: the directory holds PebbleDir.
	Pebble Engine = "pebble"
)

// The names each engine gives its data inside the data directory.
const (
	SQLiteFile = "dedup.db"
	PebbleDir  = "pebble"
)

// Detect says which engine's data dir holds. A directory holding both is
// refused: it can only come from copying files by hand, and serving either
// would hide the other's records.
func Detect(dir string) (Engine, error) {
	sqlite, err := exists(filepath.Join(dir, SQLiteFile))
	if err != nil {
		return None, err
	}
	pebble, err := exists(filepath.Join(dir, PebbleDir))
	if err != nil {
		return None, err
	}
	switch {
	case sqlite && pebble:
		return None, fmt.Errorf("data directory %s holds both a SQLite store (%s) and a Pebble store (%s/); move one away",
			dir, SQLiteFile, PebbleDir)
	case sqlite:
		return SQLite, nil
	case pebble:
		return Pebble, nil
	}
	return None, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspecting data directory: %w", err)
	}
	return true, nil
}
