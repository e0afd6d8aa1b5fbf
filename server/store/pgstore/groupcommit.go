package pgstore

import (
	"context"
	"fmt"
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
	committers = 4
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
	// Set by the committer before done is closed.
	rec      store.Record
	inserted bool
	err      error
	done     chan struct{}
}

// committer writes batches of fresh claims; see the comment at the top.
type committer struct {
	s        *Store
	maxBatch int
	queue    chan *freshClaim
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startCommitter(s *Store, maxBatch int) *committer {
	c := &committer{s: s, maxBatch: maxBatch, queue: make(chan *freshClaim), stop: make(chan struct{})}
	c.wg.Add(committers)
	for range committers {
		go c.run()
	}
	return c
}

// close stops the committers once their batches in flight are answered.
// Claims that arrive afterwards find the store unavailable.
func (c *committer) close() {
	close(c.stop)
	c.wg.Wait()
}

// insert hands a fresh claim to a committer and waits for its answer. A
// caller whose context ends while waiting gets the context's error; if its
// claim was already in a statement, the claim may have landed, the same
// window as a single INSERT cancelled mid-flight (see store.Store).
func (c *committer) insert(ctx context.Context, p store.ClaimParams, args freshArgs) (store.Record, bool, error) {
	fc := &freshClaim{ctx: ctx, p: p, args: args, done: make(chan struct{})}
	select {
	case c.queue <- fc:
	case <-c.stop:
		return store.Record{}, false, errClosed
	case <-ctx.Done():
		return store.Record{}, false, ctx.Err()
	}
	select {
	case <-fc.done:
		return fc.rec, fc.inserted, fc.err
	case <-ctx.Done():
		return store.Record{}, false, ctx.Err()
	}
}

func (c *committer) run() {
	defer c.wg.Done()
	for {
		var first *freshClaim
		select {
		case first = <-c.queue:
		case <-c.stop:
			return
		}
		c.commit(dropCancelled(c.collect(first)))
	}
}

// collect takes first and the claims already waiting behind it.
func (c *committer) collect(first *freshClaim) []*freshClaim {
	batch := []*freshClaim{first}
	for len(batch) < c.maxBatch {
		select {
		case fc := <-c.queue:
			batch = append(batch, fc)
			continue
		default:
		}
		break
	}
	return batch
}

// dropCancelled answers, and leaves out of the batch, the claims whose
// callers have given up: they were told so, and nothing of theirs may be
// written.
func dropCancelled(batch []*freshClaim) []*freshClaim {
	live := batch[:0]
	for _, fc := range batch {
		if fc.ctx.Err() != nil {
			fc.err = fc.ctx.Err()
			close(fc.done)
			continue
		}
		live = append(live, fc)
	}
	return live
}

// commit writes a batch and answers every claim in it.
func (c *committer) commit(batch []*freshClaim) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	defer func() {
		for _, fc := range batch {
			close(fc.done)
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
