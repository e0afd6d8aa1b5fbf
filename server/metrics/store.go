package metrics

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// ObserveStore wraps a store so that the failures of its hot-path calls,
// of keys and of streams, are counted by operation and class in
// dedupd_store_errors_total. The operators' calls pass through unobserved
// (see storeadmin.go): their errors go back to the operator who made them.
func (m *Metrics) ObserveStore(s store.Backend) store.Backend {
	return m.ObserveStoreOutcomes(s, nil)
}

// ObserveStoreOutcomes is ObserveStore that also tells onOutcome, when not
// nil, of every observed operation's outcome (each batch item's included),
// as the op label and the error (nil for a success): the health watcher
// judges the store by its real writes. onOutcome runs on the caller's
// goroutine, on every call, so it must be cheap.
func (m *Metrics) ObserveStoreOutcomes(s store.Backend, onOutcome func(op string, err error)) store.Backend {
	return &observedStore{inner: s, m: m, onOutcome: onOutcome}
}

// observedStore implements every method itself, without embedding the
// wrapped store, so that a method added to store.Backend must be decided
// here (observed or passed through) before the server compiles.
type observedStore struct {
	inner     store.Backend
	m         *Metrics
	onOutcome func(op string, err error)
}

var _ store.Backend = (*observedStore)(nil)

// observe is the one place a store call's end is counted: every observed
// method, lone or batched, key or stream, reports here.
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
	r, err := o.inner.Claim(ctx, p)
	o.observe("claim", err)
	return r, err
}

func (o *observedStore) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	r, err := o.inner.Complete(ctx, p)
	o.observe("complete", err)
	return r, err
}

func (o *observedStore) Reject(ctx context.Context, p store.RejectParams) (store.Record, error) {
	r, err := o.inner.Reject(ctx, p)
	o.observe("reject", err)
	return r, err
}

func (o *observedStore) ExtendLease(ctx context.Context, p store.ExtendLeaseParams) (store.Record, error) {
	r, err := o.inner.ExtendLease(ctx, p)
	o.observe("extend_lease", err)
	return r, err
}

func (o *observedStore) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	r, err := o.inner.Lookup(ctx, consumer, key)
	o.observe("lookup", err)
	return r, err
}

func (o *observedStore) DeleteExpired(ctx context.Context, limit int) (int, error) {
	n, err := o.inner.DeleteExpired(ctx, limit)
	o.observe("delete_expired", err)
	return n, err
}

func (o *observedStore) Ping(ctx context.Context) error {
	err := o.inner.Ping(ctx)
	o.observe("ping", err)
	return err
}

// ApplyBatch observes each item under its command's operation, as the
// lone call would be observed.
func (o *observedStore) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := o.inner.ApplyBatch(ctx, p)
	for i, r := range results {
		o.observe(opOf(p.Commands[i]), r.Err)
	}
	return results
}

// LookupBatch observes each key as a lookup.
func (o *observedStore) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := o.inner.LookupBatch(ctx, p)
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
