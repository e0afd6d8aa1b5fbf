package pgstore_test

import (
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// The whole suite, keys and streams, runs with group commit on (the
// default) and off: batching must never change an answer.
func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts pgstore.Options
	}{
		{"GroupCommit", pgstore.Options{}},
		{"NoGroupCommit", pgstore.Options{MaxBatch: 1}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			storetest.RunAll(t, func(t *testing.T) store.Backend { return newStoreWith(t, mode.opts) })
		})
	}
}
