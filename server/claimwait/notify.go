package claimwait

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// Notify wraps a store so that every call that can end a claim's wait
// wakes this server's waiters on its key or stream once it has
// succeeded: Complete and Reject (a retryable Reject releases the key),
// their commands in ApplyBatch (FinishBatch), DeleteRecord, and
// CompleteStream, RejectStream, ReleaseStream, ResetStream and SkipGap
// (which moves the mark, and may drop a claim in flight). A call that
// failed changed nothing, so it wakes nobody. The rest pass straight
// through (passthrough.go).
func Notify(inner store.Backend, r *Registry) store.Backend {
	return &notifying{inner: inner, r: r}
}

type notifying struct {
	inner store.Backend
	r     *Registry
}

var _ store.Backend = (*notifying)(nil)

func (n *notifying) wakeKey(consumer, key string) {
	n.r.Wake(Key{Consumer: consumer, Name: key})
}

func (n *notifying) wakeStream(consumer, stream string) {
	n.r.Wake(Key{Consumer: consumer, Name: stream, Stream: true})
}

func (n *notifying) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	rec, err := n.inner.Complete(ctx, p)
	if err == nil {
		n.wakeKey(p.Consumer, p.Key)
	}
	return rec, err
}

func (n *notifying) Reject(ctx context.Context, p store.RejectParams) (store.Record, error) {
	rec, err := n.inner.Reject(ctx, p)
	if err == nil {
		n.wakeKey(p.Consumer, p.Key)
	}
	return rec, err
}

func (n *notifying) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := n.inner.ApplyBatch(ctx, p)
	for i, cmd := range p.Commands {
		if i >= len(results) || results[i].Err != nil {
			continue
		}
		switch c := cmd.(type) {
		case store.CompleteParams:
			n.wakeKey(c.Consumer, c.Key)
		case store.RejectParams:
			n.wakeKey(c.Consumer, c.Key)
		}
	}
	return results
}

func (n *notifying) DeleteRecord(ctx context.Context, consumer, key string) (store.Record, error) {
	rec, err := n.inner.DeleteRecord(ctx, consumer, key)
	if err == nil {
		n.wakeKey(consumer, key)
	}
	return rec, err
}

func (n *notifying) CompleteStream(ctx context.Context, p store.CompleteStreamParams) (store.StreamFinishResult, error) {
	res, err := n.inner.CompleteStream(ctx, p)
	if err == nil {
		n.wakeStream(p.Consumer, p.Stream)
	}
	return res, err
}

func (n *notifying) RejectStream(ctx context.Context, p store.RejectStreamParams) (store.StreamFinishResult, error) {
	res, err := n.inner.RejectStream(ctx, p)
	if err == nil {
		n.wakeStream(p.Consumer, p.Stream)
	}
	return res, err
}

func (n *notifying) ReleaseStream(ctx context.Context, p store.ReleaseStreamParams) (store.Stream, error) {
	st, err := n.inner.ReleaseStream(ctx, p)
	if err == nil {
		n.wakeStream(p.Consumer, p.Stream)
	}
	return st, err
}

func (n *notifying) ResetStream(ctx context.Context, p store.ResetStreamParams) (store.Stream, error) {
	st, err := n.inner.ResetStream(ctx, p)
	if err == nil && !p.DryRun {
		n.wakeStream(p.Consumer, p.Stream)
	}
	return st, err
}

func (n *notifying) SkipGap(ctx context.Context, p store.SkipGapParams) (store.SkipGapResult, error) {
	res, err := n.inner.SkipGap(ctx, p)
	if err == nil && !p.DryRun {
		n.wakeStream(p.Consumer, p.Stream)
	}
	return res, err
}
