package pebblestore

import "github.com/cockroachdb/pebble/v2/vfs"

// OptionsOnFS is Options with the store on fs, for tests that need a disk
// that fails.
func OptionsOnFS(fs vfs.FS) Options { return Options{fs: fs} }
