package pebblestore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The on-disk format has two versions, checked at every Open:
//
//   - Pebble's own format major version, pinned in pebbleOptions: Pebble
//     refuses a directory written in a format newer than it knows, and
//     raises an older one only when told to, so the pin is what keeps a
//     newer dedupd from making a directory unreadable to an older one.
//   - dedupd's layout of keys and values (keys.go, codec.go), recorded
//     under formatKey when the store is created. A dedupd that finds a
//     version it does not know refuses to open the directory, rather than
//     misreading it. A change of layout is a new version, with an upgrade
//     step in Open that rewrites what it must and then the version, in one
//     synced batch, so that a crash leaves either version whole.
const formatVersion = "1"

var formatKey = []byte{tableMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// ErrUnknownFormat is returned by Open for a directory whose dedupd format
// this build does not know, such as one written by a newer dedupd.
var ErrUnknownFormat = errors.New("unknown on-disk format")

// checkFormat writes the format version into a new, empty store and
// checks it in an existing one.
func checkFormat(db *pebble.DB) error {
	v, err := readFormat(db)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		empty, err := isEmpty(db)
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: the Pebble database has keys but no dedupd format version; it was not written by dedupd", ErrUnknownFormat)
		}
		return db.Set(formatKey, []byte(formatVersion), pebble.Sync)
	case err != nil:
		return err
	case v != formatVersion:
		return fmt.Errorf("%w: format version %q, and this dedupd reads version %s only (was it written by a newer dedupd?)",
			ErrUnknownFormat, v, formatVersion)
	}
	return nil
}

func readFormat(db *pebble.DB) (string, error) {
	v, closer, err := db.Get(formatKey)
	if err != nil {
		return "", err
	}
	defer closer.Close()
	return string(v), nil
}

func isEmpty(db *pebble.DB) (bool, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return false, err
	}
	defer it.Close()
	return !it.First(), it.Error()
}

// hasRows reports whether the store holds anything outside the meta table.
func hasRows(db *pebble.DB) (bool, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tableMeta + 1}})
	if err != nil {
		return false, err
	}
	defer it.Close()
	return it.First(), it.Error()
}
