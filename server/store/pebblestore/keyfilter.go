package pebblestore

import (
	"hash/maphash"
	"sync/atomic"
)

// keyFilter is a blocked Bloom filter of record keys, safe for concurrent
// adds and tests. It answers "never added" for most keys that were not,
// and never for one that was. It is hand-written because the filter must
// take adds from many writers at once without a lock, which the common Go
// Bloom filter packages do not offer; Pebble's own filters are built once
// per table and never added to.
//
// A key sets one bit in each of the eight words of one 512-bit block (a
// cache line), chosen by one 64-bit hash: a test touches one cache line.
// At bitsPerKey bits per key that gives about 1.2% false positives at
// capacity (TestKeyFilterHoldsEveryKeyAdded measures it).
type keyFilter struct {
	seed     maphash.Seed
	words    []atomic.Uint64 // a whole number of blocks
	blocks   uint64
	capacity int64        // the keys it holds at its designed rate
	adds     atomic.Int64 // keys added, counting repeats
}

const (
	bitsPerKey  = 10
	blockWords  = 8
	minCapacity = 1 << 16
)

// newKeyFilter returns an empty filter sized for capacity keys, at least
// minCapacity and at most what maxBytes of bits hold.
func newKeyFilter(capacity, maxBytes int64) *keyFilter {
	capacity = max(capacity, minCapacity)
	capacity = min(capacity, maxBytes*8/bitsPerKey)
	blocks := uint64(capacity*bitsPerKey/(64*blockWords)) + 1
	return &keyFilter{seed: maphash.MakeSeed(), words: make([]atomic.Uint64, blocks*blockWords),
		blocks: blocks, capacity: capacity}
}

// bits returns the block's first word and the eight one-bit masks of k:
// the block from the hash's value, each word's bit from six of its bits.
func (f *keyFilter) bits(k []byte) (uint64, [blockWords]uint64) {
	h := maphash.Bytes(f.seed, k)
	first := (h % f.blocks) * blockWords
	// The block takes the hash modulo a count; the bits take the hash
	// multiplied by an odd constant, so that the two are not correlated.
	g := h * 0x9e3779b97f4a7c15
	var masks [blockWords]uint64
	for i := range masks {
		masks[i] = 1 << ((g >> (6 * i)) & 63)
	}
	return first, masks
}

// add records k.
func (f *keyFilter) add(k []byte) {
	first, masks := f.bits(k)
	for i, m := range masks {
		if w := &f.words[first+uint64(i)]; w.Load()&m == 0 {
			w.Or(m)
		}
	}
	f.adds.Add(1)
}

// mayHold reports whether k may have been added: false means it was not.
func (f *keyFilter) mayHold(k []byte) bool {
	first, masks := f.bits(k)
	for i, m := range masks {
		if f.words[first+uint64(i)].Load()&m == 0 {
			return false
		}
	}
	return true
}
