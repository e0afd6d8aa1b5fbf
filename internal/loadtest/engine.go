package loadtest

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// The in-process engine limit (--in-process): the same scenarios, callers
// and keys, driven straight at an embedded store opened in this process,
// with no gRPC, no server and no handler in between. What it costs per
// operation is the floor under what dedupd on that engine can cost, so
// that dedupd's CPU per operation can be read against it. Its CPU is this
// process's own (the callers' loop is a few percent of it).

// Engines are the embedded engines --in-process can open.
var Engines = []string{"sqlite", "pebble"}

// engineSide is the in-process side: one store in a directory of its own.
type engineSide struct {
	st     store.Backend
	dir    string
	owned  bool // dir was made by openEngine and is removed by close
	policy store.Policy
	digest []byte
	result []byte
	*scenarios
}

// enginePolicy is `dedupd serve`'s default policy, so that the engine
// writes the records dedupd would.
var enginePolicy = store.Policy{DefaultLeaseTTL: 30 * time.Second, CompletedTTL: 24 * time.Hour,
	RejectedTTL: 24 * time.Hour, ReleasedTTL: 24 * time.Hour}

// openEngine opens a fresh store of engine in dir, or in a temporary
// directory when dir is empty, with each engine's durable defaults (every
// acknowledged write synced; SQLite with group commit, as dedupd serves it).
func openEngine(ctx context.Context, cfg Config, engine, dir string) (*engineSide, error) {
	e := &engineSide{dir: dir, policy: enginePolicy, digest: []byte("dedupctl-bench-digest-0123456789"), result: resultOf(cfg.ResultBytes)}
	if dir == "" {
		d, err := os.MkdirTemp("", "dedupctl-bench-"+engine+"-")
		if err != nil {
			return nil, err
		}
		e.dir, e.owned = d, true
	}
	var err error
	switch engine {
	case "sqlite":
		e.st, err = sqlitestore.Open(ctx, e.dir, sqlitestore.Options{})
	case "pebble":
		e.st, err = pebblestore.Open(ctx, e.dir, pebblestore.Options{})
	default:
		err = fmt.Errorf("unknown engine %q (have %v)", engine, Engines)
	}
	if err != nil {
		e.close()
		return nil, fmt.Errorf("loadtest: opening the %s engine in %s: %w", engine, e.dir, err)
	}
	e.scenarios = newScenarios(e, cfg)
	return e, nil
}

func (e *engineSide) close() {
	if e.st != nil {
		_ = e.st.Close() // a benchmark's store: nothing to keep
	}
	if e.owned {
		_ = os.RemoveAll(e.dir)
	}
}

func (e *engineSide) claim(ctx context.Context, key string) (claimed, error) {
	res, err := e.st.Claim(ctx, store.ClaimParams{Consumer: BenchConsumer, Key: key, Digest: e.digest,
		Owner: "dedupctl-bench", Policy: e.policy})
	if err != nil {
		return claimed{}, err
	}
	c := claimed{token: res.Record.FencingToken, result: res.Record.Result}
	switch res.Outcome {
	case store.Acquired:
		c.outcome = acquired
	case store.InProgress:
		c.outcome = inProgress
	case store.AlreadyCompleted:
		c.outcome = completed
	case store.AlreadyRejected:
		c.outcome = rejected
	}
	return c, nil
}

func (e *engineSide) complete(ctx context.Context, key string, token int64) error {
	_, err := e.st.Complete(ctx, store.CompleteParams{Consumer: BenchConsumer, Key: key, FencingToken: token,
		Result: e.result, Policy: e.policy})
	return err
}

func (e *engineSide) release(ctx context.Context, key string, token int64) error {
	_, err := e.st.Reject(ctx, store.RejectParams{Consumer: BenchConsumer, Key: key, FencingToken: token,
		Rejection: store.Rejection{Reason: "BENCH", Retryable: true}, Policy: e.policy})
	return err
}

// emptyCall does nothing: in process there is no call to pay for.
func (e *engineSide) emptyCall(context.Context) error { return nil }
