// Package enginebench is the in-process engine limit, `dedupd
// bench-engine`: the bench's scenarios (package loadtest), callers and keys
// driven straight at an embedded store opened in this process, with no
// gRPC, no server and no handler in between. What it costs per operation is
// the floor under what dedupd on that engine can cost, so that dedupd's CPU
// per operation can be read against it. It lives apart from loadtest so
// that dedupctl, a client, links no storage engine; it calls only the typed
// store API.
package enginebench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dedupd/dedupd/internal/loadtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// Engines are the embedded engines Open can open.
var Engines = []string{"sqlite", "pebble"}

// Engine is one embedded store in a directory of its own, as a
// loadtest.Direct.
type Engine struct {
	name   string
	st     store.Backend
	dir    string
	owned  bool // dir was made by Open and is removed by Close
	digest []byte
	result []byte
}

// policy is `dedupd serve`'s default, so that the engine writes the
// records dedupd would.
var policy = store.Policy{DefaultLeaseTTL: 30 * time.Second, CompletedTTL: 24 * time.Hour,
	RejectedTTL: 24 * time.Hour, ReleasedTTL: 24 * time.Hour}

// Open opens a fresh store of engine in dir, or in a temporary directory
// when dir is empty, with each engine's durable defaults (every
// acknowledged write synced; SQLite with group commit, as dedupd serves
// it). Completes store results of resultBytes bytes, as loadtest expects.
func Open(ctx context.Context, engine, dir string, resultBytes int) (*Engine, error) {
	e := &Engine{name: engine, dir: dir, digest: []byte("dedupd-bench-engine-digest-01234"),
		result: loadtest.Result(resultBytes)}
	if dir == "" {
		d, err := os.MkdirTemp("", "dedupd-bench-"+engine+"-")
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
		e.Close()
		return nil, fmt.Errorf("enginebench: opening the %s engine in %s: %w", engine, e.dir, err)
	}
	return e, nil
}

// Close closes the store, and removes its directory if Open made it.
func (e *Engine) Close() {
	if e.st != nil {
		_ = e.st.Close() // a benchmark's store: nothing to keep
	}
	if e.owned {
		_ = os.RemoveAll(e.dir)
	}
}

// Name says which engine this is.
func (e *Engine) Name() string { return e.name + " engine" }

// Claim claims key under the bench's consumer.
func (e *Engine) Claim(ctx context.Context, key string) (loadtest.Claimed, error) {
	res, err := e.st.Claim(ctx, store.ClaimParams{Consumer: loadtest.BenchConsumer, Key: key, Digest: e.digest,
		Owner: "dedupd-bench-engine", Policy: policy})
	if err != nil {
		return loadtest.Claimed{}, err
	}
	c := loadtest.Claimed{Token: res.Record.FencingToken, Result: res.Record.Result}
	switch res.Outcome {
	case store.Acquired:
		c.Outcome = loadtest.Acquired
	case store.InProgress:
		c.Outcome = loadtest.InProgress
	case store.AlreadyCompleted:
		c.Outcome = loadtest.Completed
	case store.AlreadyRejected:
		c.Outcome = loadtest.Rejected
	}
	return c, nil
}

// Complete completes key with the bench's result.
func (e *Engine) Complete(ctx context.Context, key string, token int64) error {
	_, err := e.st.Complete(ctx, store.CompleteParams{Consumer: loadtest.BenchConsumer, Key: key, FencingToken: token,
		Result: e.result, Policy: policy})
	return err
}

// Release gives key up with a retryable rejection.
func (e *Engine) Release(ctx context.Context, key string, token int64) error {
	_, err := e.st.Reject(ctx, store.RejectParams{Consumer: loadtest.BenchConsumer, Key: key, FencingToken: token,
		Rejection: store.Rejection{Reason: "BENCH", Retryable: true}, Policy: policy})
	return err
}
