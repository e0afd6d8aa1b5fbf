package storetest_test

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The Admin half of memStore: plain loops over the map under the same lock,
// written as the contract reads, for the suite to check itself against. It
// selects and counts by the read rules of package store, as Apply decides
// its writes.

func (m *memStore) ListRecords(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := store.Now(time.Now())
	var out []store.Record
	for _, r := range m.records {
		if p.Matches(&r, now) {
			out = append(out, clone(r))
		}
	}
	slices.SortFunc(out, func(a, b store.Record) int { return strings.Compare(a.Key, b.Key) })
	return out[:min(len(out), p.Limit)], nil
}

// DeleteRecord makes the record expire now, keeping it for its token.
func (m *memStore) DeleteRecord(ctx context.Context, consumer, key string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{consumer, key}
	r, ok := m.records[k]
	now := store.Now(time.Now())
	if !ok || !store.IsLive(&r, now) {
		return store.Record{}, store.ErrNotFound
	}
	r.ExpiresAt = now
	m.records[k] = r
	return clone(r), nil
}

func (m *memStore) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	p.CountOnly = false
	n, err := m.purge(ctx, p)
	return int(n), err
}

func (m *memStore) CountPurge(ctx context.Context, p store.PurgeParams) (int64, error) {
	p.CountOnly = true
	return m.purge(ctx, p)
}

// purge is the model's one purge, as an engine's Purge: it deletes at
// most p.Limit matching records, or with p.CountOnly counts them all.
func (m *memStore) purge(ctx context.Context, p store.PurgeParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, n := store.Now(time.Now()), int64(0)
	for k, r := range m.records {
		if !p.Matches(&r, now) || !p.CountOnly && n >= int64(p.Limit) {
			continue
		}
		if !p.CountOnly {
			delete(m.records, k)
		}
		n++
	}
	return n, nil
}

func (m *memStore) Stats(ctx context.Context, consumer string) ([]store.ConsumerStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	recs := make([]store.Record, 0, len(m.records))
	for _, r := range m.records {
		recs = append(recs, r)
	}
	return store.StatsOf(recs, consumer, time.Now()), nil
}

func (m *memStore) PutPolicy(ctx context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range []*time.Duration{&p.CompletedTTL, &p.RejectedTTL, &p.ReleasedTTL, &p.DefaultLeaseTTL, &p.MaxLeaseTTL} {
		*d = d.Truncate(time.Microsecond)
	}
	p.UpdatedAt = store.Now(time.Now())
	m.policies[p.Consumer] = p
	return p, nil
}

func (m *memStore) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	if err := ctx.Err(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return policyOf(m.policies, consumer, false)
}

func (m *memStore) ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.ConsumerPolicy
	for _, p := range m.policies {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b store.ConsumerPolicy) int { return strings.Compare(a.Consumer, b.Consumer) })
	return out, nil
}

func (m *memStore) DeletePolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	if err := ctx.Err(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return policyOf(m.policies, consumer, true)
}

// policyOf is the model's read of consumer's policy of either kind, and
// with drop its delete, under the caller's lock: ErrNoPolicy when there
// is none.
func policyOf[P any](policies map[string]P, consumer string, drop bool) (P, error) {
	p, ok := policies[consumer]
	if !ok {
		var none P
		return none, store.ErrNoPolicy
	}
	if drop {
		delete(policies, consumer)
	}
	return p, nil
}
