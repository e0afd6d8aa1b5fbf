package stack_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/replaycache"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
	"github.com/dedupd/dedupd/server/store/storetest"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// full is every layer on, as a server with the replay cache, tracing,
// metrics and claim waiting serves: failures counted must stay zero on a
// healthy store.
func full(t *testing.T) stack.Options {
	spans := tracetest.NewSpanRecorder()
	return stack.Options{
		Cache: replaycache.Options{MaxBytes: 64 << 10},
		Observe: storetrace.Options{
			Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
			Counted: func(op store.Op, class string, failed bool, err error) {
				if failed && class != store.FailureCanceled && class != store.FailureDeadline {
					t.Errorf("%s failed on a healthy store: %s (%v)", op.Name, class, err)
				}
			},
		},
		Wake: claimwait.New(claimwait.Options{MaxWait: time.Minute}),
	}
}

// The stack the server serves must not change an answer: the whole suite
// runs through it, every layer on, on every backend.
func TestConformance(t *testing.T) {
	open := map[string]func(t *testing.T) store.Engine{
		"sqlite": func(t *testing.T) store.Engine {
			st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"pebble": func(t *testing.T) store.Engine {
			st, err := pebblestore.Open(context.Background(), t.TempDir(), pebblestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"postgres": func(t *testing.T) store.Engine {
			st, err := pgstore.Open(context.Background(), pgtest.URL(t), pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
	for name, openOne := range open {
		t.Run(name, func(t *testing.T) {
			storetest.RunAll(t, func(t *testing.T) store.Backend {
				s := stack.Build(openOne(t), full(t))
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}
