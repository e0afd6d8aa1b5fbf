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
// batch a committer would collect if these callers were all waiting, with
// each caller's context, followed by each caller's own continuation in
// order. Requires group commit on.
func ClaimBatch(s *Store, ctxs []context.Context, ps []store.ClaimParams) ([]store.ClaimResult, []error) {
	batch := make([]*freshClaim, len(ps))
	for i, p := range ps {
		args, err := freshArgsFor(p)
		if err != nil {
			panic(err)
		}
		batch[i] = &freshClaim{ctx: ctxs[i], p: p, args: args, wake: make(chan struct{})}
	}
	s.batch.commit(dropCancelled(batch), nil)
	results, errs := make([]store.ClaimResult, len(ps)), make([]error, len(ps))
	for i, fc := range batch {
		<-fc.wake
		if fc.err != nil && ctxs[i].Err() != nil {
			errs[i] = fc.err
			continue
		}
		results[i], errs[i] = s.finishClaim(ctxs[i], fc.p, fc.rec, fc.inserted, fc.err)
	}
	return results, errs
}
