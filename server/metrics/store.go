package metrics

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// ObserveStore wraps a store so that its failures are counted by operation
// and class. Methods it does not know pass through the embedded interface
// unobserved, so a store that grows stays a valid store.Store here.
func (m *Metrics) ObserveStore(s store.Store) store.Store {
	return &observedStore{Store: s, m: m}
}

type observedStore struct {
	store.Store
	m *Metrics
}

func (o *observedStore) observe(op string, err error) {
	// Refusals the contract defines are answers, not failures.
	if class, failed := store.Classify(err); failed {
		o.m.storeErrors.WithLabelValues(op, class).Inc()
	}
}

func (o *observedStore) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	r, err := o.Store.Claim(ctx, p)
	o.observe("claim", err)
	return r, err
}

func (o *observedStore) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	r, err := o.Store.Complete(ctx, p)
	o.observe("complete", err)
	return r, err
}

func (o *observedStore) Reject(ctx context.Context, p store.RejectParams) (store.Record, error) {
	r, err := o.Store.Reject(ctx, p)
	o.observe("reject", err)
	return r, err
}

func (o *observedStore) ExtendLease(ctx context.Context, p store.ExtendLeaseParams) (store.Record, error) {
	r, err := o.Store.ExtendLease(ctx, p)
	o.observe("extend_lease", err)
	return r, err
}

func (o *observedStore) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	r, err := o.Store.Lookup(ctx, consumer, key)
	o.observe("lookup", err)
	return r, err
}

func (o *observedStore) DeleteExpired(ctx context.Context, limit int) (int, error) {
	n, err := o.Store.DeleteExpired(ctx, limit)
	o.observe("delete_expired", err)
	return n, err
}

func (o *observedStore) Ping(ctx context.Context) error {
	err := o.Store.Ping(ctx)
	o.observe("ping", err)
	return err
}

// ApplyBatch counts each failed item under its command's operation, as
// the lone call would be counted.
func (o *observedStore) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := o.Store.ApplyBatch(ctx, p)
	for i, r := range results {
		if r.Err != nil {
			o.observe(opOf(p.Commands[i]), r.Err)
		}
	}
	return results
}

// LookupBatch counts each failed key as a lookup.
func (o *observedStore) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := o.Store.LookupBatch(ctx, p)
	for _, r := range results {
		if r.Err != nil {
			o.observe("lookup", r.Err)
		}
	}
	return results
}

// opOf names a command's operation as the lone calls' op labels do.
func opOf(cmd store.Command) string {
	switch cmd.(type) {
	case store.ClaimParams:
		return "claim"
	case store.CompleteParams:
		return "complete"
	case store.RejectParams:
		return "reject"
	}
	return "extend_lease"
}
