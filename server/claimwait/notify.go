package claimwait

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// Notify wraps a store engine so that every write that can end a claim's
// wait wakes this server's waiters on its key or stream once it has
// succeeded (Wakes says which). A write that failed changed nothing, so
// it wakes nobody. The reads pass straight through: they end no wait, and
// purges and expiry deletes of many keys are seen by the waiters' own
// polls (Options.Poll).
func Notify(inner store.Engine, r *Registry) store.Engine {
	return &notifying{Reader: inner, Upkeep: inner, Reports: inner, inner: inner, r: r}
}

type notifying struct {
	store.Reader
	store.Upkeep
	store.Reports
	inner store.Engine
	r     *Registry
}

var _ store.Engine = (*notifying)(nil)

// Wakes reports whether cmd, once it succeeded, can end a claim's wait on
// its key or stream, and whether that is decided here at all (a test
// holds every command decided). Complete and Reject end one (a retryable
// Reject releases the key), as does DeleteRecord; of streams, the
// finishes and the release, and a ResetStream or SkipGap that wrote
// (which move the mark, and may drop a claim in flight). Claims and lease
// extensions keep what they hold; ClaimParked takes a parked event no
// waiter claims; DropParked leaves the mark and the claim in flight.
func Wakes(cmd any) (wake, decided bool) {
	switch c := cmd.(type) {
	case store.CompleteParams, store.RejectParams, store.DeleteRecordParams,
		store.CompleteStreamParams, store.RejectStreamParams, store.ReleaseStreamParams:
		return true, true
	case store.ResetStreamParams:
		return !c.DryRun, true
	case store.SkipGapParams:
		return !c.DryRun, true
	case store.ClaimParams, store.ExtendLeaseParams,
		store.ClaimStreamParams, store.ExtendStreamLeaseParams, store.ClaimParkedParams, store.DropParkedParams:
		return false, true
	}
	return false, false
}

func (n *notifying) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	d, err := n.inner.Apply(ctx, cmd)
	if err == nil {
		n.wakeKey(cmd)
	}
	return d, err
}

func (n *notifying) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := n.inner.ApplyBatch(ctx, p)
	for i, cmd := range p.Commands {
		if i < len(results) && results[i].Err == nil {
			n.wakeKey(cmd)
		}
	}
	return results
}

func (n *notifying) ApplyStream(ctx context.Context, cmd store.StreamCommand) (store.StreamDecision, error) {
	d, err := n.inner.ApplyStream(ctx, cmd)
	if err == nil {
		if wake, _ := Wakes(cmd); wake {
			consumer, stream := store.StreamOf(cmd)
			n.r.Wake(Key{Consumer: consumer, Name: stream, Stream: true})
		}
	}
	return d, err
}

func (n *notifying) wakeKey(cmd store.Command) {
	if wake, _ := Wakes(cmd); wake {
		consumer, key := store.KeyOf(cmd)
		n.r.Wake(Key{Consumer: consumer, Name: key})
	}
}
