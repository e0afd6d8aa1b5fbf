package pgstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// Group commit of fresh claims.
//
// A fresh claim is one INSERT; at 32 callers PostgreSQL spends most of each
// on its commit (a WAL flush), so a multi-row INSERT of the claims that are
// waiting at the same moment costs about as much as one of them. Callers
// hand their claim to a small set of committer goroutines over an
// unbuffered channel. A committer takes one claim, then every other claim
// whose caller is already blocked sending (up to maxBatch), writes them in
// one statement, and answers each caller. Nothing waits for a batch to
// fill: at low load a committer is idle when a claim arrives and the batch
// is that one claim, written with the single-row statement, so only a busy
// pipeline batches, and the batch is whatever queued while the previous one
// ran.
//
// Batching never changes an answer. The batch statement is INSERT ... ON
// CONFLICT DO NOTHING, so a claim whose key already has a row inserts
// nothing and its caller takes the ordinary path (readModifyWrite), exactly
// as it would alone. A key named twice in one batch goes into the
// statement once; the later claims take the ordinary path after the batch
// has landed, as if they had arrived just after it.

const (
	// DefaultMaxBatch is the most claims written in one statement when
	// Options.MaxBatch is zero. PostgreSQL's commit cost is flat in the row
	// count up to well past this; larger batches only add latency to their
	// first caller.
	DefaultMaxBatch = 32

	// committers is how many batches may be in flight at once: while one
	// commits, the next collects. More would only split the queue into
	// smaller batches.
	committers = 2
)

// Options tune a Store; the zero value is the default.
type Options struct {
	// MaxBatch is the most fresh claims written in one statement. Zero
	// means DefaultMaxBatch; one turns group commit off, so every claim is
	// its own statement.
	MaxBatch int
}

func (o Options) maxBatch() int {
	if o.MaxBatch <= 0 {
		return DefaultMaxBatch
	}
	return o.MaxBatch
}

// freshClaim is one caller's fresh claim waiting for a committer.
type freshClaim struct {
	ctx  context.Context
	p    store.ClaimParams
	args freshArgs
	// lead is set, under committer.mu, when this caller is made the
	// leader of a batch that was queued: it writes lead, itself included.
	lead []*freshClaim
	// Set by the batch's leader before wake is closed.
	rec      store.Record
	inserted bool
	err      error
	// wake is closed when the claim is answered or its caller made leader.
	wake chan struct{}
}

// committer groups fresh claims; see the comment at the top. There is no
// goroutine of its own: a caller arriving while fewer than maxInFlight
// batches are being written writes its claim at once (a batch of one);
// otherwise it queues. A leader that has written its batch takes the queue
// as the next batch and makes that batch's first caller its leader, whose
// goroutine has to wake up for its answer anyway. So the queue is never
// left without a leader coming, and no batch waits on a scheduler handoff
// to a goroutine of the store's.
type committer struct {
	s           *Store
	maxBatch    int
	maxInFlight int

	mu       sync.Mutex
	queue    []*freshClaim // guarded by mu; non-empty only when inFlight == maxInFlight
	inFlight int           // guarded by mu
	closed   bool          // guarded by mu
	leaders  sync.WaitGroup
}

func startCommitter(s *Store, maxBatch int) *committer {
	return &committer{s: s, maxBatch: maxBatch, maxInFlight: committers}
}

// close waits for the batches in flight, and those queued behind them, to
// be answered. Claims that arrive afterwards find the store unavailable.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.leaders.Wait()
}

// insert writes a fresh claim, in a batch with others when a batch is
// already being written, and returns its answer. A caller whose context
// ends while its claim is queued withdraws it and gets the context's error,
// nothing written. Once its claim is in a statement the caller still gets
// the context's error at once, and the claim may have landed: the same
// window as a single INSERT cancelled mid-flight (see store.Store).
func (c *committer) insert(ctx context.Context, p store.ClaimParams, args freshArgs) (store.Record, bool, error) {
	fc := &freshClaim{ctx: ctx, p: p, args: args, wake: make(chan struct{})}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return store.Record{}, false, errClosed
	case c.inFlight < c.maxInFlight:
		c.inFlight++
		c.leaders.Add(1)
		c.mu.Unlock()
		c.lead(fc, []*freshClaim{fc})
		return fc.rec, fc.inserted, fc.err
	}
	c.queue = append(c.queue, fc)
	c.mu.Unlock()
	select {
	case <-fc.wake:
	case <-ctx.Done():
		if !c.mustLead(fc) {
			return store.Record{}, false, ctx.Err()
		}
	}
	if fc.lead != nil {
		c.lead(fc, fc.lead)
	}
	return fc.rec, fc.inserted, fc.err
}

// mustLead is called by a caller who is giving up. It withdraws the claim
// if it is still queued and reports false; or reports whether the caller
// has been made a leader, whom the batch then waits for.
func (c *committer) mustLead(fc *freshClaim) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.queue, fc); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
		return false
	}
	return fc.lead != nil
}

// lead writes batch, led by leader, then hands the queue to its next
// leader, or, when nothing is queued, gives its place in flight up.
func (c *committer) lead(leader *freshClaim, batch []*freshClaim) {
	c.commit(dropCancelled(batch), leader)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.inFlight--
		c.leaders.Done()
		return
	}
	n := min(len(c.queue), c.maxBatch)
	next := slices.Clone(c.queue[:n])
	c.queue = slices.Delete(c.queue, 0, n)
	next[0].lead = next
	close(next[0].wake)
}

// dropCancelled answers, and leaves out of the batch, the claims whose
// callers have given up: they were told so, and nothing of theirs may be
// written. A leader who gave up is still a leader; only its claim is
// dropped.
func dropCancelled(batch []*freshClaim) []*freshClaim {
	live := make([]*freshClaim, 0, len(batch))
	for _, fc := range batch {
		if err := fc.ctx.Err(); err != nil {
			fc.err = err
			if fc.lead == nil {
				close(fc.wake)
			}
			continue
		}
		live = append(live, fc)
	}
	return live
}

// commit writes a batch and answers every claim in it but the leader's,
// which its caller reads on return.
func (c *committer) commit(batch []*freshClaim, leader *freshClaim) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	defer func() {
		for _, fc := range batch {
			if fc != leader {
				close(fc.wake)
			}
		}
	}()
	if len(batch) == 1 {
		fc := batch[0]
		fc.rec, fc.inserted, fc.err = c.s.insertOne(ctx, fc.args)
		return
	}
	// Each key goes into the statement once; its later claims in this
	// batch find the row and take the ordinary path.
	first := make(map[recordKey]*freshClaim, len(batch))
	var rows []freshArgs
	for _, fc := range batch {
		k := recordKey{fc.p.Consumer, fc.p.Key}
		if _, dup := first[k]; !dup {
			first[k] = fc
			rows = append(rows, fc.args)
		}
	}
	inserted, err := c.s.insertMany(ctx, rows)
	for _, fc := range batch {
		k := recordKey{fc.p.Consumer, fc.p.Key}
		if err != nil {
			fc.err = err
			continue
		}
		if rec, ok := inserted[k]; ok && first[k] == fc {
			fc.rec, fc.inserted = rec, true
		}
	}
}

// batchContext bounds a batch statement by the latest deadline among its
// callers, or by none when any caller has none. It is not cancelled with
// any one caller: the others still want their answer.
func batchContext(batch []*freshClaim) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, fc := range batch {
		d, ok := fc.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// errClosed is what a claim gets once the store is closing.
var errClosed = fmt.Errorf("pgstore: %w: store is closed", store.ErrUnavailable)

// insertManySQL inserts a batch of fresh claims given as parallel arrays;
// the lease and retention are microseconds from the database's now. Only
// the rows it inserted come back.
const insertManySQL = `INSERT INTO dedup_records (
    consumer, key, state, digest, fencing_token, attempts, owner,
    created_at, updated_at, lease_expires_at, expires_at)
SELECT c, k, s, d, t, a, o,
    statement_timestamp(), statement_timestamp(),
    statement_timestamp() + l * INTERVAL '1 microsecond',
    statement_timestamp() + e * INTERVAL '1 microsecond'
FROM unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::BYTEA[], $5::INT8[], $6::INT8[], $7::TEXT[], $8::INT8[], $9::INT8[])
    AS batch (c, k, s, d, t, a, o, l, e)
ON CONFLICT (consumer, key) DO NOTHING
RETURNING ` + recordColumns

// recordKey names a record.
type recordKey struct{ consumer, key string }

// insertMany inserts fresh claims with distinct keys in one statement and
// returns the records it inserted, by key.
func (s *Store) insertMany(ctx context.Context, rows []freshArgs) (map[recordKey]store.Record, error) {
	n := len(rows)
	var (
		consumers, keys, states, owners = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		digests                         = make([][]byte, n)
		tokens, attempts, leases, lives = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i, r := range rows {
		consumers[i], keys[i], states[i], owners[i] = r.consumer, r.key, r.state, r.owner
		digests[i], tokens[i], attempts[i] = r.digest, r.token, r.attempts
		leases[i], lives[i] = r.lease.Microseconds(), r.life.Microseconds()
	}
	var inserted map[recordKey]store.Record
	err := s.withRetry(ctx, "claim", func(ctx context.Context) error {
		inserted = make(map[recordKey]store.Record, n)
		result, err := s.pool.Query(ctx, insertManySQL,
			consumers, keys, states, digests, tokens, attempts, owners, leases, lives)
		if err != nil {
			return err
		}
		recs, err := pgx.CollectRows(result, func(row pgx.CollectableRow) (store.Record, error) {
			return scanRecord(row)
		})
		for _, r := range recs {
			inserted[recordKey{r.Consumer, r.Key}] = r
		}
		return err
	})
	return inserted, err
}
