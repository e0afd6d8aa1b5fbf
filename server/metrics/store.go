package metrics

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// ObserveStore wraps a store so that its failures are counted by operation
// and class. Methods it does not know pass through the embedded interface
// unobserved, so a store that grows stays a valid store.Store here.
func (m *Metrics) ObserveStore(s store.Store) store.Store {
	return m.ObserveStoreOutcomes(s, nil)
}

// ObserveStoreOutcomes is ObserveStore that also tells onOutcome, when not
// nil, of every operation's outcome (each batch item's included), as the
// op label and the error (nil for a success): the health watcher judges
// the store by its real writes. onOutcome runs on the caller's goroutine,
// on every call, so it must be cheap.
func (m *Metrics) ObserveStoreOutcomes(s store.Store, onOutcome func(op string, err error)) store.Store {
	return &observedStore{Store: s, m: m, onOutcome: onOutcome}
}

type observedStore struct {
	store.Store
	m         *Metrics
	onOutcome func(op string, err error)
}

func (o *observedStore) observe(op string, err error) {
	// Refusals the contract defines are answers, not failures.
	if class, failed := store.Classify(err); failed {
		o.m.storeErrors.WithLabelValues(op, class).Inc()
	}
	if o.onOutcome != nil {
		o.onOutcome(op, err)
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

// ApplyBatch observes each item under its command's operation, as the
// lone call would be observed.
func (o *observedStore) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := o.Store.ApplyBatch(ctx, p)
	for i, r := range results {
		o.observe(opOf(p.Commands[i]), r.Err)
	}
	return results
}

// LookupBatch observes each key as a lookup.
func (o *observedStore) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := o.Store.LookupBatch(ctx, p)
	for _, r := range results {
		o.observe("lookup", r.Err)
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
