package pebblestore

import (
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
)

// Policies are one row per consumer in 'c' (keys) and 'd' (streams), the
// consumer as it is after the table byte. Durations are kept to the
// microsecond, as every store keeps them.

func policyKey(table byte, consumer string) []byte { return append([]byte{table}, consumer...) }

func truncate(ds ...*time.Duration) {
	for _, d := range ds {
		*d = d.Truncate(time.Microsecond)
	}
}

// putKeyPolicy creates or replaces a consumer's policy.
func (s *Store) putKeyPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	truncate(&p.CompletedTTL, &p.RejectedTTL, &p.ReleasedTTL, &p.DefaultLeaseTTL, &p.MaxLeaseTTL)
	p.UpdatedAt = now()
	return p, s.putPolicy(ctx, policyKey(tablePolicy, p.Consumer), encodePolicy(&p))
}

// getKeyPolicy returns a consumer's policy, or store.ErrNoPolicy.
func (s *Store) getKeyPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return getPolicy(s, ctx, tablePolicy, consumer, decodePolicy)
}

// ListPolicies returns every policy, ordered by consumer.
func (s *Store) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	var out []store.ConsumerPolicy
	err := s.iterate(ctx, []byte{tablePolicy}, []byte{tablePolicy + 1}, func(k, v []byte) (bool, error) {
		p, err := decodePolicy(v, string(k[1:]))
		out = append(out, p)
		return err == nil, err
	})
	if err != nil {
		return nil, dbError("list policies", err)
	}
	return out, nil
}

// deleteKeyPolicy deletes a consumer's policy and returns it.
func (s *Store) deleteKeyPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return deletePolicy(s, ctx, tablePolicy, consumer, decodePolicy)
}

// putStreamPolicy creates or replaces a consumer's stream policy.
func (s *Store) putStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerStreamPolicy{}, err
	}
	truncate(&p.StreamTTL, &p.GapTimeout)
	p.UpdatedAt = now()
	return p, s.putPolicy(ctx, policyKey(tableStreamPolicy, p.Consumer), encodeStreamPolicy(&p))
}

// getStreamPolicy returns a consumer's stream policy, or store.ErrNoPolicy.
func (s *Store) getStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return getPolicy(s, ctx, tableStreamPolicy, consumer, decodeStreamPolicy)
}

// deleteStreamPolicy deletes a consumer's stream policy and returns it.
func (s *Store) deleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return deletePolicy(s, ctx, tableStreamPolicy, consumer, decodeStreamPolicy)
}

func (s *Store) putPolicy(ctx context.Context, k, v []byte) error {
	if err := s.enterFor(ctx); err != nil {
		return err
	}
	defer s.leave()
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	if err := s.db.Set(k, v, pebble.Sync); err != nil {
		return dbError("put policy", err)
	}
	return nil
}

func getPolicy[P any](s *Store, ctx context.Context, table byte, consumer string, decode func([]byte, string) (P, error)) (P, error) {
	var zero P
	if err := s.enterFor(ctx); err != nil {
		return zero, err
	}
	defer s.leave()
	return readPolicy(s.db, table, consumer, decode)
}

func readPolicy[P any](r pebble.Reader, table byte, consumer string, decode func([]byte, string) (P, error)) (P, error) {
	var zero P
	v, closer, err := r.Get(policyKey(table, consumer))
	if errors.Is(err, pebble.ErrNotFound) {
		return zero, store.ErrNoPolicy
	}
	if err != nil {
		return zero, dbError("get policy", err)
	}
	defer closer.Close()
	p, err := decode(v, consumer)
	if err != nil {
		return zero, dbError("get policy", err)
	}
	return p, nil
}

func deletePolicy[P any](s *Store, ctx context.Context, table byte, consumer string, decode func([]byte, string) (P, error)) (P, error) {
	var zero P
	if err := s.enterFor(ctx); err != nil {
		return zero, err
	}
	defer s.leave()
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	p, err := readPolicy(s.db, table, consumer, decode)
	if err != nil {
		return zero, err
	}
	if err := s.db.Delete(policyKey(table, consumer), pebble.Sync); err != nil {
		return zero, dbError("delete policy", err)
	}
	return p, nil
}
