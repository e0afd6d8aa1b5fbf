package pebblestore_test

import (
	"context"
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

func openStore(t testing.TB, dir string) *pebblestore.Store {
	t.Helper()
	s, err := pebblestore.Open(context.Background(), dir, pebblestore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func newStore(t testing.TB) *pebblestore.Store {
	t.Helper()
	s := openStore(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) store.Backend { return newStore(t) })
}
