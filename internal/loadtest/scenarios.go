package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// What a claim found, on any side (Claimed.Outcome).
const (
	Acquired   = "ACQUIRED"
	InProgress = "IN_PROGRESS"
	Completed  = "COMPLETED"
	Rejected   = "REJECTED"
)

type claimed struct {
	outcome string
	token   int64
	result  []byte
}

// side is what a scenario needs from dedupd or from the hand-written
// baseline: the three things a worker does with a key.
type side interface {
	claim(ctx context.Context, key string) (claimed, error)
	complete(ctx context.Context, key string, token int64) error
	// release gives the key up so that the next claim acquires it.
	release(ctx context.Context, key string, token int64) error
	// emptyCall does a call that does no work: the floor under the others.
	emptyCall(ctx context.Context) error
}

// scenarios builds the operations of each scenario on one side, and sets up
// the completed keys that replays need, once per side.
type scenarios struct {
	side        side
	result      []byte
	replayOnce  sync.Once
	replayErr   error
	replayKeys  int
	contended   int
	concurrency int
	batchSize   int
}

func newScenarios(s side, cfg Config) *scenarios {
	return &scenarios{side: s, result: Result(cfg.ResultBytes), replayKeys: cfg.ReplayKeys,
		contended: cfg.ContendedKeys, concurrency: cfg.Concurrency, batchSize: cfg.BatchSize}
}

// Result is the result every side stores: n bytes, none of them zero.
func Result(n int) []byte { return bytes.Repeat([]byte("r"), n) }

// scenario is one row of the bench: what a worker does, and how to set it
// up on a side. A scenario added here is listed, documented in --help and
// run by default.
type scenario struct {
	name string
	help string
	// serviceOnly scenarios have nothing to compare on the baseline.
	serviceOnly bool
	// batch scenarios handle Config.BatchSize keys per operation (batch.go).
	batch bool
	// keysOnly scenarios need nothing but claim, complete and release, so
	// every key service runs them: an engine in process (Direct) and Redis.
	keysOnly bool
	// prepare, when set, runs once per side before the measurement.
	prepare func(*scenarios, context.Context) error
	op      func(*scenarios) operation
}

// scenarioTable lists the scenarios in their default order.
var scenarioTable = []scenario{
	{name: "floor", serviceOnly: true,
		help: "an empty call (the standard health Check) on the same server and connections: what any call costs",
		op:   func(s *scenarios) operation { return s.floor }},
	{name: "claim-new", keysOnly: true, help: "claims of keys never seen; each must acquire",
		op: func(s *scenarios) operation { return s.claimNew }},
	{name: "cycle", keysOnly: true, help: "claim a new key and complete it, the whole life of a message",
		op: func(s *scenarios) operation { return s.cycle }},
	{name: "replay", keysOnly: true, help: "claims of keys completed earlier; each must return the stored result",
		prepare: (*scenarios).prepareReplay, op: func(s *scenarios) operation { return s.replay }},
	{name: "contended", keysOnly: true, help: "all callers claim one of a few keys; whoever acquires releases it again",
		op: func(s *scenarios) operation { return s.contendedClaim }},
	{name: "mixed", keysOnly: true, help: "40% cycle, 40% replay, 10% contended, 10% claim-new",
		prepare: (*scenarios).prepareReplay, op: func(s *scenarios) operation { return s.mixed }},
	{name: "claim-batch", batch: true, help: "a poll of --batch-size new keys claimed in one ClaimBatch; each must acquire",
		op: func(s *scenarios) operation { return s.claimBatchNew }},
	{name: "cycle-batch", batch: true, help: "a poll of new keys claimed in one ClaimBatch, then completed in one FinishBatch",
		op: func(s *scenarios) operation { return s.cycleBatch }},
	{name: "replay-batch", batch: true, help: "a redelivered poll: keys completed earlier claimed in one ClaimBatch; each must return the stored result",
		prepare: (*scenarios).prepareReplay, op: func(s *scenarios) operation { return s.replayBatch }},
	{name: "stream-cycle", help: "claim and complete the next event of a stream, each caller on a stream of its own (streams.go)",
		op: func(s *scenarios) operation { return s.streamCycle() }},
}

func scenarioNamed(name string) (scenario, bool) {
	for _, sc := range scenarioTable {
		if sc.name == name {
			return sc, true
		}
	}
	return scenario{}, false
}

// operation returns scenario name's operation on this side, set up.
func (s *scenarios) operation(ctx context.Context, name string) (operation, error) {
	sc, ok := scenarioNamed(name)
	if !ok {
		return nil, fmt.Errorf("unknown scenario %q", name)
	}
	if sc.prepare != nil {
		if err := sc.prepare(s, ctx); err != nil {
			return nil, err
		}
	}
	return sc.op(s), nil
}

func (s *scenarios) floor(ctx context.Context, _ int64) error { return s.side.emptyCall(ctx) }

// keyOf names key number i of a kind. Real keys (message ids, UUIDs,
// hashes) are spread over the key space, so the numbers are scrambled:
// sequential keys would all land on the last page of the index and make
// a large table look cheaper than it is.
func keyOf(kind string, i int64) string {
	// splitmix64: a bijection, so keys never repeat.
	z := uint64(i) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return fmt.Sprintf("%s-%016x", kind, z^(z>>31))
}

func (s *scenarios) claimNew(ctx context.Context, i int64) error {
	return s.mustAcquire(ctx, keyOf("new", i), false)
}

func (s *scenarios) cycle(ctx context.Context, i int64) error {
	return s.mustAcquire(ctx, keyOf("cycle", i), true)
}

func (s *scenarios) mustAcquire(ctx context.Context, key string, complete bool) error {
	c, err := s.side.claim(ctx, key)
	if err != nil {
		return err
	}
	if c.outcome != Acquired {
		return fmt.Errorf("claim of new key %s: %s, want %s", key, c.outcome, Acquired)
	}
	if complete {
		return s.side.complete(ctx, key, c.token)
	}
	return nil
}

func (s *scenarios) replay(ctx context.Context, i int64) error {
	key := keyOf("replay", i%int64(s.replayKeys))
	c, err := s.side.claim(ctx, key)
	if err != nil {
		return err
	}
	if c.outcome != Completed || !bytes.Equal(c.result, s.result) {
		return fmt.Errorf("replay of %s: %s with %d result bytes, want %s with %d", key, c.outcome, len(c.result), Completed, len(s.result))
	}
	return nil
}

func (s *scenarios) contendedClaim(ctx context.Context, _ int64) error {
	key := fmt.Sprint("contended-", rand.N(s.contended))
	c, err := s.side.claim(ctx, key)
	switch {
	case err != nil:
		return err
	case c.outcome == Acquired:
		return s.side.release(ctx, key, c.token)
	case c.outcome != InProgress:
		return fmt.Errorf("claim of contended key %s: %s", key, c.outcome)
	}
	return nil
}

func (s *scenarios) mixed(ctx context.Context, i int64) error {
	switch i % 10 {
	case 0, 1, 2, 3:
		return s.mustAcquire(ctx, keyOf("mixed", i), true)
	case 4, 5, 6, 7:
		return s.replay(ctx, i)
	case 8:
		return s.contendedClaim(ctx, i)
	}
	return s.mustAcquire(ctx, keyOf("mixed", i), false)
}

// prepareReplay claims and completes the replayed keys, from as many
// callers as the run has.
func (s *scenarios) prepareReplay(ctx context.Context) error {
	s.replayOnce.Do(func() {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, s.concurrency)
		for c := range s.concurrency {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(s.replayKeys) && errs[c] == nil; i = next.Add(1) - 1 {
					errs[c] = s.mustAcquire(ctx, keyOf("replay", i), true)
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				s.replayErr = err
				return
			}
		}
	})
	return s.replayErr
}
