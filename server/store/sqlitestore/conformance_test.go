package sqlitestore_test

import (
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// The whole suite, keys and streams, runs with group commit on (the
// default) and off: batching must never change an answer.
func forEachMode(t *testing.T, run func(t *testing.T, open func(t *testing.T) *sqlitestore.Store)) {
	for _, mode := range []struct {
		name string
		opts sqlitestore.Options
	}{
		{"GroupCommit", sqlitestore.Options{}},
		{"NoGroupCommit", sqlitestore.Options{MaxBatch: 1}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			run(t, func(t *testing.T) *sqlitestore.Store {
				s := openStoreWith(t, t.TempDir(), mode.opts)
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

func TestConformance(t *testing.T) {
	forEachMode(t, func(t *testing.T, open func(t *testing.T) *sqlitestore.Store) {
		storetest.RunAll(t, func(t *testing.T) store.Backend { return open(t) })
	})
}
