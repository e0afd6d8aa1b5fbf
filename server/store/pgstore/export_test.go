package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/server/store"
)

// OpenTraced is Open with a query tracer on every connection, so that tests
// can see the statements a call sends.
func OpenTraced(ctx context.Context, databaseURL string, opts Options, tracer pgx.QueryTracer) (*Store, error) {
	return open(ctx, databaseURL, opts, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tracer })
}

// ClaimBatch runs claims as one group-commit batch, deterministically: the
// batch a leader would write if these callers were all waiting, with each
// caller's context, followed by each caller's own continuation in order.
// Requires group commit on.
func ClaimBatch(s *Store, ctxs []context.Context, ps []store.ClaimParams) ([]store.ClaimResult, []error) {
	batch := make([]*call[freshClaim, insertResult], len(ps))
	for i, p := range ps {
		args, err := freshArgsFor(p)
		if err != nil {
			panic(err)
		}
		batch[i] = &call[freshClaim, insertResult]{ctx: ctxs[i], req: freshClaim{p: p, args: args}, wake: make(chan struct{})}
	}
	s.fresh.writeBatch(batch, nil)
	results, errs := make([]store.ClaimResult, len(ps)), make([]error, len(ps))
	for i, c := range batch {
		<-c.wake
		if c.err != nil && ctxs[i].Err() != nil {
			errs[i] = c.err
			continue
		}
		results[i], errs[i] = s.finishClaim(ctxs[i], c.req.p, c.resp.rec, c.resp.inserted, c.err)
	}
	return results, errs
}

// FinishBatch runs Complete, Reject and ExtendLease commands as one
// group-commit batch, deterministically, each followed by its caller's own
// continuation in order. Requires group commit on.
func FinishBatch(s *Store, cmds []store.Command) ([]store.Record, []error) {
	batch := make([]*call[finishCall, finishResult], len(cmds))
	for i, cmd := range cmds {
		fc := finishCall{cmd: cmd}
		switch p := cmd.(type) {
		case store.CompleteParams:
			fc.op, fc.consumer, fc.key = "complete", p.Consumer, p.Key
		case store.RejectParams:
			fc.op, fc.consumer, fc.key = "reject", p.Consumer, p.Key
		case store.ExtendLeaseParams:
			fc.op, fc.consumer, fc.key = "extend lease", p.Consumer, p.Key
		}
		batch[i] = &call[finishCall, finishResult]{ctx: context.Background(), req: fc, wake: make(chan struct{})}
	}
	s.finish.writeBatch(batch, nil)
	recs, errs := make([]store.Record, len(cmds)), make([]error, len(cmds))
	for i, c := range batch {
		<-c.wake
		d, err := c.resp.d, c.err
		if err == nil && c.resp.again {
			d, err = s.readModifyWrite(context.Background(), c.req.op, c.req.consumer, c.req.key, c.req.cmd)
		}
		recs[i], errs[i] = d.Record, err
	}
	return recs, errs
}

// Pool is the store's connection pool, for tests that inspect its sessions.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

// LeaseStatements are the statements of PendingLeases and InFlightLeases.
var LeaseStatements = map[string]string{"dedup_records_pending_lease": pendingLeasesSQL,
	"dedup_streams_in_flight": inFlightLeasesSQL}

// InsertFreshSQL and InsertSharedFreshSQL are the prepared inserts of
// fresh claims.
var InsertFreshSQL, InsertSharedFreshSQL = insertFreshSQL, insertSharedFreshSQL

// ReadKeysSQL is the batch read of the records of a set of keys.
var ReadKeysSQL = readKeysSQL

// FinishHeldSQL is the guarded UPDATE of holders' finishes.
var FinishHeldSQL = finishHeldSQL

// FinishHeldArgs are finishHeldSQL's parameters for finishes, as the store
// builds them.
func FinishHeldArgs(finishes []store.Command) []any {
	held := make([]heldCall, len(finishes))
	for i, cmd := range finishes {
		f, _ := store.HeldFinishOf(cmd)
		consumer, key := store.KeyOf(cmd)
		held[i] = heldCall{c: &call[finishCall, finishResult]{req: finishCall{consumer: consumer, key: key, cmd: cmd}}, f: f}
	}
	return heldArrays(held)
}
