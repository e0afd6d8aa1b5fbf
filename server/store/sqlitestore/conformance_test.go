package sqlitestore_test

import (
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// The suite runs with group commit on (the default) and off: batching must
// never change an answer.
func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts sqlitestore.Options
	}{
		{"GroupCommit", sqlitestore.Options{}},
		{"NoGroupCommit", sqlitestore.Options{MaxBatch: 1}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			storetest.RunAll(t, func(t *testing.T) store.Store {
				s := openStoreWith(t, t.TempDir(), mode.opts)
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

func TestStreamConformance(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts sqlitestore.Options
	}{
		{"GroupCommit", sqlitestore.Options{}},
		{"NoGroupCommit", sqlitestore.Options{MaxBatch: 1}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			storetest.RunStreams(t, func(t *testing.T) store.StreamStore {
				s := openStoreWith(t, t.TempDir(), mode.opts)
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}
