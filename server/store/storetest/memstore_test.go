package storetest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// memStore is the smallest Store that keeps the contract: one mutex makes
// every call atomic, time.Now is the store's clock, and store.Apply takes
// every decision. It is the suite's self-test and a reference for what a
// backend must do around Apply: load, decide, write if told to.
type memStore struct {
	mu       sync.Mutex
	records  map[[2]string]store.Record
	policies map[string]store.ConsumerPolicy
}

func newMemStore() *memStore {
	return &memStore{records: map[[2]string]store.Record{}, policies: map[string]store.ConsumerPolicy{}}
}

// apply runs one command on a key under the lock. Records are copied on the
// way in and out, as a database would, so callers never share memory with
// what is stored.
func (m *memStore) apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applyLocked(cmd)
}

// applyLocked is apply with the lock held.
func (m *memStore) applyLocked(cmd store.Command) (store.Decision, error) {
	var k [2]string
	k[0], k[1] = store.KeyOf(cmd)
	var stored *store.Record
	if r, ok := m.records[k]; ok {
		r = clone(r)
		stored = &r
	}
	d, err := store.Apply(stored, cmd, time.Now())
	if err != nil {
		return store.Decision{}, err
	}
	if d.Write {
		m.records[k] = clone(d.Record)
	}
	d.Record = clone(d.Record)
	return d, nil
}

// ApplyBatch applies the commands in order under one hold of the lock.
func (m *memStore) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := make([]store.ItemResult, len(p.Commands))
	if err := ctx.Err(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, cmd := range p.Commands {
		results[i] = store.ResultOf(m.applyLocked(cmd))
	}
	return results
}

func (m *memStore) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := make([]store.LookupResult, len(p.Keys))
	for i, key := range p.Keys {
		results[i].Record, results[i].Err = m.Lookup(ctx, p.Consumer, key)
	}
	return results
}

func (m *memStore) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	d, err := m.apply(ctx, p)
	return store.ClaimResult{Outcome: d.Outcome, Record: d.Record, RetryAfter: d.RetryAfter}, err
}

func (m *memStore) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	d, err := m.apply(ctx, p)
	return d.Record, err
}

func (m *memStore) Reject(ctx context.Context, p store.RejectParams) (store.Record, error) {
	d, err := m.apply(ctx, p)
	return d.Record, err
}

func (m *memStore) ExtendLease(ctx context.Context, p store.ExtendLeaseParams) (store.Record, error) {
	d, err := m.apply(ctx, p)
	return d.Record, err
}

func (m *memStore) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[[2]string{consumer, key}]
	if !ok || !store.IsLive(&r, time.Now()) {
		return store.Record{}, store.ErrNotFound
	}
	return clone(r), nil
}

func (m *memStore) DeleteExpired(ctx context.Context, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, n := time.Now(), 0
	for k, r := range m.records {
		if n >= limit {
			break
		}
		if !store.IsLive(&r, now) {
			delete(m.records, k)
			n++
		}
	}
	return n, nil
}

func (m *memStore) Ping(ctx context.Context) error { return ctx.Err() }

func (m *memStore) Close() error { return nil }

func clone(r store.Record) store.Record {
	r.Digest = cloneBytes(r.Digest)
	r.Result = cloneBytes(r.Result)
	if r.Rejection != nil {
		rej := *r.Rejection
		rej.Detail = cloneBytes(rej.Detail)
		r.Rejection = &rej
	}
	return r
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// memBackend is the model of the whole store.Backend contract: keys in
// memStore, streams in memStreams, which share nothing, as in the SQL
// stores where keys and streams are rows of separate tables.
type memBackend struct {
	*memStore
	*memStreams
}

var _ store.Backend = memBackend{}

// TestMemBackend is the suite's self-test: every group on the model.
func TestMemBackend(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) store.Backend {
		s := memBackend{newMemStore(), newMemStreams()}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
