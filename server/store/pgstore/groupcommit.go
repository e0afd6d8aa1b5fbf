package pgstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// Group commit.
//
// A fresh claim is one INSERT, and a Complete (or Reject, or ExtendLease) a
// read and a compare-and-set UPDATE. At 32 callers PostgreSQL spends most of
// each statement on work that does not grow with its row count (the round
// trip, parsing, planning, the commit's WAL flush), so one multi-row
// statement for the calls waiting at the same moment costs little more
// than one of them. The batcher (batcher.go) forms the batches; this file
// and groupfinish.go write them.
//
// Batching never changes an answer. The fresh-claim statement is INSERT ...
// ON CONFLICT DO NOTHING, so a claim whose key already has a row inserts
// nothing and its caller takes the ordinary path (readModifyWrite), exactly
// as it would alone. A key named twice in one batch goes into the
// statement once; the later calls take the ordinary path after the batch
// has landed, as if they had arrived just after it.

const (
	// DefaultMaxBatch is the most calls written in one statement when
	// Options.MaxBatch is zero. PostgreSQL's cost per statement is nearly
	// flat in the row count up to well past this; larger batches only add
	// latency to their first caller.
	DefaultMaxBatch = 32

	// maxInFlight is how many batches of one kind may be written at once:
	// while one commits, the next collects. More would only split the queue
	// into smaller batches.
	maxInFlight = 2
)

// Options tune a Store; the zero value is the default.
type Options struct {
	// MaxBatch is the most calls written in one statement. Zero means
	// DefaultMaxBatch; one turns group commit off, so every call is its
	// own statement (or two).
	MaxBatch int
	// OnRetry, when set, is called with the operation's name each time the
	// store runs an attempt again after a serialization failure or a lost
	// compare-and-set (for metrics). It must be cheap and safe for
	// concurrent use.
	OnRetry func(op string)
	// Commits, when set, records each group-commit batch written and
	// each fresh insert of a ClaimBatch as one commit, with the commands
	// it carried (commitmetrics). Calls written alone with group commit
	// off are not recorded.
	Commits *commitmetrics.Recorder
}

func (o Options) maxBatch() int {
	if o.MaxBatch <= 0 {
		return DefaultMaxBatch
	}
	return o.MaxBatch
}

// freshClaim is a claim of a key that may be free.
type freshClaim struct {
	p    store.ClaimParams
	args freshArgs
}

// insertResult says whether a fresh claim was inserted, and as what.
type insertResult struct {
	rec      store.Record
	inserted bool
}

type freshBatcher = batcher[freshClaim, insertResult]

func (s *Store) newFreshBatcher(maxBatch int) *freshBatcher {
	return newBatcher(maxBatch, maxInFlight, s.writeFreshClaims, func(n int) { s.commits.Commit(commitmetrics.KindClaim, n) })
}

// writeFreshClaims inserts a batch of fresh claims: the single-row
// statement for one, the multi-row one for more.
func (s *Store) writeFreshClaims(ctx context.Context, batch []*call[freshClaim, insertResult]) {
	ctx, span := storetrace.StartBatch(ctx, "pgstore.claim_batch", len(batch),
		func(i int) (context.Context, string) { return batch[i].ctx, batch[i].req.p.Consumer })
	defer storetrace.EndBatch(span, len(batch), func(i int) error { return batch[i].err })
	if len(batch) == 1 {
		c := batch[0]
		c.resp.rec, c.resp.inserted, c.err = s.insertOne(ctx, c.req.p, c.req.args)
		return
	}
	// Each key goes into the statement once; its later claims in this
	// batch find the row and take the ordinary path.
	first := make(map[recordKey]*call[freshClaim, insertResult], len(batch))
	var rows []freshArgs
	for _, c := range batch {
		k := recordKey{c.req.p.Consumer, c.req.p.Key}
		if _, dup := first[k]; !dup {
			first[k] = c
			rows = append(rows, c.req.args)
		}
	}
	// Two batches in flight whose keys overlap wait on each other's
	// uncommitted rows; taking keys in one global order makes that a queue,
	// never a deadlock.
	slices.SortFunc(rows, func(a, b freshArgs) int {
		return store.CompareKeys(a.consumer, a.key, b.consumer, b.key)
	})
	inserted, err := s.insertMany(ctx, rows)
	for _, c := range batch {
		k := recordKey{c.req.p.Consumer, c.req.p.Key}
		if err != nil {
			c.err = err
			continue
		}
		if at, ok := inserted[k]; ok && first[k] == c {
			rec, err := freshRecord(c.req.p, at)
			c.resp, c.err = insertResult{rec: rec, inserted: err == nil}, err
		}
	}
}

// errClosed is what a claim gets once the store is closing.
var errClosed = fmt.Errorf("pgstore: %w: store is closed", store.ErrUnavailable)

// recordKey names a record.
type recordKey struct{ consumer, key string }

// insertMany inserts fresh claims with distinct keys in one statement
// (insertFresh), retrying as a lone claim would.
func (s *Store) insertMany(ctx context.Context, rows []freshArgs) (map[recordKey]time.Time, error) {
	var inserted map[recordKey]time.Time
	err := s.withRetry(ctx, "claim", func(ctx context.Context) error {
		var err error
		inserted, err = s.insertFresh(ctx, rows)
		return err
	})
	return inserted, err
}
