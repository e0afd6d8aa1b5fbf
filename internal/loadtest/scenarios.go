package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// What a claim found, on either side.
const (
	acquired   = "ACQUIRED"
	inProgress = "IN_PROGRESS"
	completed  = "COMPLETED"
	rejected   = "REJECTED"
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
}

func newScenarios(s side, cfg Config) *scenarios {
	return &scenarios{side: s, result: resultOf(cfg.ResultBytes), replayKeys: cfg.ReplayKeys,
		contended: cfg.ContendedKeys, concurrency: cfg.Concurrency}
}

func resultOf(n int) []byte { return bytes.Repeat([]byte("r"), n) }

// operation returns scenario name's operation:
//
//   - claim-new: claim a key never seen; must acquire.
//   - cycle: claim a new key and complete it, the whole life of a message.
//   - replay: claim a key completed earlier; must return the stored result.
//   - contended: claim one of a few keys all callers share; the caller that
//     acquires releases it again, the rest find it in progress.
//   - mixed: 40% cycle, 40% replay, 10% contended, 10% claim-new.
func (s *scenarios) operation(ctx context.Context, name string) (operation, error) {
	switch name {
	case "claim-new":
		return s.claimNew, nil
	case "cycle":
		return s.cycle, nil
	case "replay", "mixed":
		if err := s.prepareReplay(ctx); err != nil {
			return nil, err
		}
		if name == "replay" {
			return s.replay, nil
		}
		return s.mixed, nil
	case "contended":
		return s.contendedClaim, nil
	}
	return nil, fmt.Errorf("unknown scenario %q", name)
}

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
	if c.outcome != acquired {
		return fmt.Errorf("claim of new key %s: %s, want %s", key, c.outcome, acquired)
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
	if c.outcome != completed || !bytes.Equal(c.result, s.result) {
		return fmt.Errorf("replay of %s: %s with %d result bytes, want %s with %d", key, c.outcome, len(c.result), completed, len(s.result))
	}
	return nil
}

func (s *scenarios) contendedClaim(ctx context.Context, _ int64) error {
	key := fmt.Sprint("contended-", rand.N(s.contended))
	c, err := s.side.claim(ctx, key)
	switch {
	case err != nil:
		return err
	case c.outcome == acquired:
		return s.side.release(ctx, key, c.token)
	case c.outcome != inProgress:
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
