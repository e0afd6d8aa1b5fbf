package api

import (
	"context"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// Batch sizes of Purge.
const (
	DefaultPurgeBatch = 1000
	MaxPurgeBatch     = 10000
)

// Purge deletes in batches, each its own transaction in the store, and
// sends the running count after each. It stops for cancellation between
// batches, never inside one, so a cancelled purge leaves deleted what it
// deleted and everything else as it was, and has settled which is which by
// the time it returns. Records changed after the purge started are
// never selected: otherwise a purge of a busy consumer would chase its new
// records and might never end. That cut-off is taken on this server's
// clock while records' times are the store's, so with a shared database
// it is only as sharp as the clocks agree.
func (s *AdminService) Purge(req *dedupv1.PurgeRequest, stream dedupv1.AdminService_PurgeServer) error {
	ctx := stream.Context()
	p, err := purgeParams(req, time.Now())
	if err != nil {
		return s.fail(ctx, err, req.GetConsumer(), "")
	}
	if req.GetDryRun() {
		n, err := s.store.CountPurge(ctx, p)
		if err != nil {
			return s.fail(ctx, err, req.GetConsumer(), "")
		}
		return stream.Send(&dedupv1.PurgeResponse{Deleted: n, Done: true})
	}
	var deleted int64
	for {
		if err := ctx.Err(); err != nil {
			return s.fail(ctx, err, req.GetConsumer(), "")
		}
		n, err := s.purgeBatch(ctx, p)
		if err != nil {
			return s.fail(ctx, err, req.GetConsumer(), "")
		}
		deleted += int64(n)
		if n == 0 {
			return stream.Send(&dedupv1.PurgeResponse{Deleted: deleted, Done: true})
		}
		if err := stream.Send(&dedupv1.PurgeResponse{Deleted: deleted}); err != nil {
			return err
		}
	}
}

// purgeBatchTimeout bounds one batch, which runs on after the call is
// cancelled.
const purgeBatchTimeout = time.Minute

// purgeBatch runs one batch to its end even if the call is cancelled
// meanwhile. Cancelling the statement instead would leave its outcome
// unknown when the cancel meets the COMMIT (a remote database may commit
// after the caller gave up), so the caller could not tell what was
// deleted; this way the call ends only once it is settled.
func (s *AdminService) purgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), purgeBatchTimeout)
	defer cancel()
	return s.store.PurgeBatch(ctx, p)
}

// purgeParams validates a Purge request; started caps updated_before.
func purgeParams(req *dedupv1.PurgeRequest, started time.Time) (store.PurgeParams, error) {
	var v validator
	switch {
	case req.GetConsumer() == "" && !req.GetExpiredOnly():
		v.fail("consumer", "is required unless expired_only is set")
	case req.GetConsumer() != "":
		v.consumer(req.GetConsumer())
	}
	p := store.PurgeParams{
		Consumer:      req.GetConsumer(),
		States:        v.states("states", req.GetStates()),
		UpdatedBefore: started,
		ExpiredOnly:   req.GetExpiredOnly(),
		Limit:         DefaultPurgeBatch,
	}
	if before := v.timestamp("updated_before", req.GetUpdatedBefore()); !before.IsZero() && before.Before(started) {
		p.UpdatedBefore = before
	}
	switch n := req.GetBatchSize(); {
	case n < 0 || n > MaxPurgeBatch:
		v.fail("batch_size", "must be between 1 and %d (0 takes %d), got %d", MaxPurgeBatch, DefaultPurgeBatch, n)
	case n > 0:
		p.Limit = int(n)
	}
	return p, v.result()
}
