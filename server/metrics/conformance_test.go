package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// Observing must not change an answer: the whole suite runs through the
// decorator on the embedded store, and the suite's refusals (it makes
// plenty) are never counted as failures.
func TestConformance(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) store.Backend {
		inner, err := sqlitestore.Open(t.Context(), t.TempDir(), sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := New()
		s := stack.Build(inner, stack.Options{Observe: m.StoreCounters(nil)})
		t.Cleanup(func() {
			s.Close()
			for _, class := range []string{store.FailureUnavailable, store.FailureInternal} {
				for _, op := range storeOps {
					if n := testutil.ToFloat64(m.storeErrors.WithLabelValues(op, class)); n != 0 {
						t.Errorf("%v %s failures of %s counted on a healthy store", n, class, op)
					}
				}
			}
		})
		return s
	})
}
