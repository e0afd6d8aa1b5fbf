package loadtest

import (
	"context"
	"errors"
)

// Direct is a key service driven in this process instead of dedupd over
// gRPC: an embedded engine opened by the tool that links it (`dedupd
// bench-engine`, package enginebench), so that dedupctl links none. Run
// drives it with the same scenarios, callers and keys as dedupd (those
// with keysOnly set), and its CPU per operation is this process's.
type Direct interface {
	// Name says what is driven, for the report ("pebble engine").
	Name() string
	Claim(ctx context.Context, key string) (Claimed, error)
	Complete(ctx context.Context, key string, token int64) error
	// Release gives the key up so that the next claim acquires it.
	Release(ctx context.Context, key string, token int64) error
}

// Claimed is what a claim tells a worker: Outcome is Acquired, InProgress,
// Completed or Rejected; Result is the stored result of a completed key.
type Claimed struct {
	Outcome string
	Token   int64
	Result  []byte
}

// directSide is a Direct as a side of the scenarios.
type directSide struct {
	Direct
	*scenarios
}

func (d *directSide) claim(ctx context.Context, key string) (claimed, error) {
	c, err := d.Claim(ctx, key)
	return claimed{outcome: c.Outcome, token: c.Token, result: c.Result}, err
}

func (d *directSide) complete(ctx context.Context, key string, token int64) error {
	return d.Complete(ctx, key, token)
}

func (d *directSide) release(ctx context.Context, key string, token int64) error {
	return d.Release(ctx, key, token)
}

// emptyCall: in process there is no call to pay for, so no floor.
func (d *directSide) emptyCall(context.Context) error {
	return errors.New("loadtest: an engine in process has no empty call")
}
