package pebblestore

import "github.com/cockroachdb/pebble/v2/vfs"

// OptionsOnFS is Options with the store on fs, for tests that need a disk
// that fails.
func OptionsOnFS(fs vfs.FS) Options { return Options{fs: fs} }

// TableBytesWritten is what Pebble has written to tables so far, by its
// flushes and compactions.
func TableBytesWritten(s *Store) uint64 {
	t := s.db.Metrics().Total()
	return t.TableBytesFlushed + t.TableBytesCompacted
}
