package pebblestore

import (
	"hash/maphash"
	"slices"
	"sync"
)

// stripeCount is the number of key locks. Two keys share a lock with odds
// of one in stripeCount, which costs only a little waiting; enough of them
// keeps 32 or more callers on distinct keys from queueing behind each other.
const stripeCount = 1024

// stripes are the striped locks that make a read-decide-write of one key
// atomic: a writer holds its key's stripe from reading the row until its
// batch has committed. A call writing many keys (ApplyBatch, the reaper, a
// purge) takes their stripes in ascending order of stripe, one global
// order, so two such calls never wait for each other in a cycle.
type stripes struct {
	seed  maphash.Seed
	once  sync.Once
	locks [stripeCount]sync.Mutex
}

func (s *stripes) of(consumer, name string) int {
	s.once.Do(func() { s.seed = maphash.MakeSeed() })
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(consumer)
	h.WriteByte(0)
	h.WriteString(name)
	return int(h.Sum64() % stripeCount)
}

// lockOne locks one key's stripe and returns its unlock.
func (s *stripes) lockOne(consumer, name string) func() {
	mu := &s.locks[s.of(consumer, name)]
	mu.Lock()
	return mu.Unlock
}

// lockAll locks the stripes of every (consumer, name) in ascending stripe
// order, each once, and returns the unlock of them all.
func (s *stripes) lockAll(names [][2]string) func() {
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = s.of(n[0], n[1])
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.locks[i].Lock()
	}
	return func() {
		for _, i := range idx {
			s.locks[i].Unlock()
		}
	}
}

// lockEvery locks every stripe, in order, and returns the unlock of them
// all: no write is between its read and its commit while they are held.
func (s *stripes) lockEvery() func() {
	for i := range s.locks {
		s.locks[i].Lock()
	}
	return func() {
		for i := range s.locks {
			s.locks[i].Unlock()
		}
	}
}
