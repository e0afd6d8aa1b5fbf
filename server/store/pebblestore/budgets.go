package pebblestore

import (
	"context"
	"sync"
)

// parkBudgets are each consumer's parked payload bytes, kept in memory: the
// store is the only process on its directory, so after one count at Open
// the sum changes only through this store's own writes. A park weighs its
// payload against this sum under the consumer's mutex, decides, and adds
// its bytes before its commit (taking them back if the commit fails), so
// that two parks cannot both fit in the last room, while their commits,
// and their fsyncs, still run side by side. Writes that free bytes
// subtract them after their commit: meanwhile the sum is a little high,
// which can only refuse a park, never let one past the budget.
type parkBudgets struct {
	mu         sync.Mutex
	byConsumer map[string]*parkBudget
}

type parkBudget struct {
	mu    sync.Mutex
	bytes int64
}

// of returns consumer's budget, created at zero.
func (p *parkBudgets) of(consumer string) *parkBudget {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byConsumer == nil {
		p.byConsumer = map[string]*parkBudget{}
	}
	b := p.byConsumer[consumer]
	if b == nil {
		b = &parkBudget{}
		p.byConsumer[consumer] = b
	}
	return b
}

// add changes consumer's sum by delta.
func (p *parkBudgets) add(consumer string, delta int64) {
	if delta == 0 {
		return
	}
	b := p.of(consumer)
	b.mu.Lock()
	b.bytes += delta
	b.mu.Unlock()
}

// loadBudgets counts every consumer's parked bytes, once, at Open.
func (s *Store) loadBudgets() error {
	return s.iterate(context.Background(), []byte{tableParked}, []byte{tableParked + 1}, func(k, v []byte) (bool, error) {
		c, _, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		ev, err := decodeParked(v, c, "", 0, false)
		if err != nil {
			return false, err
		}
		s.budgets.add(c, ev.PayloadBytes)
		return true, nil
	})
}
