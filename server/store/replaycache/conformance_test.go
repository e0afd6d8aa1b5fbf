package replaycache_test

import (
	"context"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/replaycache"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
	"github.com/dedupd/dedupd/server/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The cache must not change an answer: the whole suite runs through it, on
// both stores, with a budget small enough that entries are evicted.
func TestConformance(t *testing.T) {
	opts := replaycache.Options{MaxBytes: 64 << 10}
	t.Run("sqlite", func(t *testing.T) {
		storetest.RunAll(t, func(t *testing.T) store.Backend {
			inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := stack.Build(inner, stack.Options{Cache: opts})
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("postgres", func(t *testing.T) {
		storetest.RunAll(t, func(t *testing.T) store.Backend {
			inner, err := pgstore.Open(context.Background(), pgtest.URL(t), pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inner.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := stack.Build(inner, stack.Options{Cache: opts})
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}
