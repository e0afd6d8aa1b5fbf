package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// Group commit of Complete, Reject and ExtendLease: a batch writes its
// holders' finishes in one guarded UPDATE (finishheld.go); for the rest it
// reads their keys in one statement, lets store.Apply decide each, and
// writes the decided records in one compare-and-set UPDATE. A call whose row changed
// between the read and the write (its compare-and-set missed), or whose
// key another call of the batch already names, is not answered from the
// batch: its caller runs the ordinary readModifyWrite, which is what it
// would have done alone after such a miss.

// finishCall is a write to a key that must already hold a record.
type finishCall struct {
	op            string
	consumer, key string
	cmd           store.Command
}

// finishResult is a finishing call's decision, or, with again set, the
// instruction to take the ordinary path.
type finishResult struct {
	d     store.Decision
	again bool
	// fromRead says the answer needs no write (a refusal, a repeat, or
	// again): it stands even if the batch's write then fails, as it would
	// for the call alone, whose read-modify-write stops after the read.
	fromRead bool
}

type finishBatcher = batcher[finishCall, finishResult]

func (s *Store) newFinishBatcher(maxBatch int) *finishBatcher {
	return newBatcher(maxBatch, maxInFlight, s.writeFinishes, func(n int) { s.commits.Commit(commitmetrics.KindFinish, n) })
}

// finishKey runs a finishing call, in a batch when group commit is on.
func (s *Store) finishKey(ctx context.Context, op, consumer, key string, cmd store.Command) (store.Decision, error) {
	if s.finish != nil {
		r, err := s.finish.do(ctx, finishCall{op: op, consumer: consumer, key: key, cmd: cmd})
		if err != nil || !r.again {
			return r.d, err
		}
	}
	return s.readModifyWrite(ctx, op, consumer, key, cmd)
}

// writeFinishes answers a batch of finishing calls: the holders' finishes
// in one statement (finishHeld), the rest by reading and writing.
func (s *Store) writeFinishes(ctx context.Context, batch []*call[finishCall, finishResult]) {
	ctx, span := storetrace.StartBatch(ctx, "pgstore.finish_batch", len(batch),
		func(i int) (context.Context, string) { return batch[i].ctx, batch[i].req.consumer })
	defer storetrace.EndBatch(span, len(batch), func(i int) error { return batch[i].err })
	calls := firstOfEachKey(batch)
	rest := s.finishHeld(ctx, calls)
	if len(rest) == 1 {
		// Written while the batch holds its place in flight, so that calls
		// arriving meanwhile queue into the next batch.
		c := rest[0]
		c.resp.d, c.err = s.readModifyWrite(ctx, c.req.op, c.req.consumer, c.req.key, c.req.cmd)
		return
	}
	if len(rest) == 0 {
		return
	}
	err := s.withRetry(ctx, rest[0].req.op, func(ctx context.Context) error {
		return s.finishMany(ctx, rest)
	})
	if err != nil {
		for _, c := range rest {
			if !c.resp.fromRead {
				c.resp, c.err = finishResult{}, err
			}
		}
	}
}

// firstOfEachKey returns the first call on each key of batch, and marks
// every later one to take the ordinary path after the batch: one statement
// writes a row once.
func firstOfEachKey(batch []*call[finishCall, finishResult]) []*call[finishCall, finishResult] {
	first := make(map[recordKey]bool, len(batch))
	calls := make([]*call[finishCall, finishResult], 0, len(batch))
	for _, c := range batch {
		k := recordKey{c.req.consumer, c.req.key}
		if first[k] {
			c.resp.again = true
			continue
		}
		first[k] = true
		calls = append(calls, c)
	}
	return calls
}

// finishMany is one attempt at a batch of calls on distinct keys: read,
// decide, compare-and-set. It sets every call's answer, or returns the
// error that failed the attempt.
func (s *Store) finishMany(ctx context.Context, calls []*call[finishCall, finishResult]) error {
	for _, c := range calls {
		c.resp, c.err = finishResult{}, nil
	}
	stored, now, err := s.readMany(ctx, calls)
	if err != nil {
		return err
	}
	var writes []versionedRecord
	for _, c := range calls {
		row, ok := stored[recordKey{c.req.consumer, c.req.key}]
		var rec *store.Record
		if ok {
			rec = &row.rec
		}
		// With no row, Apply refuses every finishing command before it
		// looks at the clock, so now may be unset.
		c.resp.d, c.err = store.Apply(rec, c.req.cmd, now)
		switch {
		case c.err != nil || !c.resp.d.Write:
			c.resp.fromRead = true
		case !ok:
			c.resp.again, c.resp.fromRead = true, true // an insert: not a finishing write
		default:
			writes = append(writes, versionedRecord{rec: c.resp.d.Record, version: row.version})
		}
	}
	if len(writes) == 0 {
		return nil
	}
	// Rows are locked in one global key order, so concurrent batches queue
	// instead of deadlocking (see writeFreshClaims).
	slices.SortFunc(writes, func(a, b versionedRecord) int {
		return store.CompareKeys(a.rec.Consumer, a.rec.Key, b.rec.Consumer, b.rec.Key)
	})
	written, err := s.updateMany(ctx, writes)
	if err != nil {
		return err
	}
	for _, c := range calls {
		if c.err != nil || !c.resp.d.Write || c.resp.again {
			continue
		}
		if rec, ok := written[recordKey{c.req.consumer, c.req.key}]; ok {
			c.resp.d.Record = rec
		} else {
			c.resp = finishResult{again: true} // the row changed since the read
		}
	}
	return nil
}

// versionedRecord is a record as read, or to be written, with the row
// version its compare-and-set expects.
type versionedRecord struct {
	rec     store.Record
	version int64
}

// readMany reads the records of a batch's keys (see readKeys).
func (s *Store) readMany(ctx context.Context, calls []*call[finishCall, finishResult]) (map[recordKey]versionedRecord, time.Time, error) {
	keys := make([]recordKey, len(calls))
	for i, c := range calls {
		keys[i] = recordKey{c.req.consumer, c.req.key}
	}
	return s.readKeys(ctx, keys)
}

// updateManySQL writes decided records given as parallel arrays, each only
// if its row is still at the version read ($17); the rows it wrote come
// back.
var updateManySQL = updateFromArrays(1) + `
RETURNING ` + qualifiedRecord("r")

// updateFromArrays is the compare-and-set UPDATE of records given as the
// parallel arrays of recordArrays, numbered from $first: each row only if
// it is still at the version read.
func updateFromArrays(first int) string {
	return `UPDATE dedup_records AS r SET
    state = u.state, digest = u.digest, fencing_token = u.fencing_token, attempts = u.attempts,
    owner = u.owner, result = u.result, rejection_reason = u.rejection_reason,
    rejection_message = u.rejection_message, rejection_detail = u.rejection_detail,
    rejection_retryable = u.rejection_retryable, created_at = u.created_at, updated_at = u.updated_at,
    lease_expires_at = u.lease_expires_at, expires_at = u.expires_at,
    row_version = r.row_version + 1
FROM ` + unnestRecords(first) + `
WHERE r.consumer = u.consumer AND r.key = u.key AND r.row_version = u.version`
}

// unnestRecords is the table of the arrays of recordArrays, numbered from
// $first, as u (recordColumns, version).
func unnestRecords(first int) string {
	types := []string{"TEXT", "TEXT", "TEXT", "BYTEA", "INT8", "INT8", "TEXT", "BYTEA",
		"TEXT", "TEXT", "BYTEA", "BOOL", "TIMESTAMPTZ", "TIMESTAMPTZ", "TIMESTAMPTZ", "TIMESTAMPTZ", "INT8"}
	params := make([]string, len(types))
	for i, t := range types {
		params[i] = fmt.Sprintf("$%d::%s[]", first+i, t)
	}
	return `unnest(` + strings.Join(params, ", ") + `)
    AS u (` + recordColumns + `, version)`
}

// qualifiedRecord is recordColumns, each prefixed with a table alias.
func qualifiedRecord(alias string) string { return qualifiedColumns(alias, recordColumns) }

// updateMany writes records with a compare-and-set each, in one statement,
// and returns those it wrote, by key.
func (s *Store) updateMany(ctx context.Context, writes []versionedRecord) (map[recordKey]store.Record, error) {
	rows, err := s.pool.Query(ctx, updateManySQL, append([]any{planEachTime}, recordArrays(writes)...)...)
	if err != nil {
		return nil, err
	}
	return collectWritten(rows)
}

// collectWritten reads the rows of recordColumns a write returned, by key.
func collectWritten(rows pgx.Rows) (map[recordKey]store.Record, error) {
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Record, error) { return scanRecord(row) })
	if err != nil {
		return nil, err
	}
	written := make(map[recordKey]store.Record, len(recs))
	for _, r := range recs {
		written[recordKey{r.Consumer, r.Key}] = r
	}
	return written, nil
}

// recordArrays are the parameters of a multi-row write of records: one
// array per column of recordColumns, then the versions read.
func recordArrays(writes []versionedRecord) []any {
	n := len(writes)
	var (
		consumers, keys, states, owners = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		digests, results, details       = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		tokens, attempts, versions      = make([]int64, n), make([]int64, n), make([]int64, n)
		reasons, messages               = make([]*string, n), make([]*string, n)
		retryables                      = make([]*bool, n)
		created, updated                = make([]time.Time, n), make([]time.Time, n)
		leases, expires                 = make([]time.Time, n), make([]time.Time, n)
	)
	for i, w := range writes {
		r := w.rec
		consumers[i], keys[i], states[i], owners[i] = r.Consumer, r.Key, string(r.State), r.Owner
		digests[i], results[i] = notNull(r.Digest), r.Result
		tokens[i], attempts[i], versions[i] = r.FencingToken, r.Attempts, w.version
		if j := r.Rejection; j != nil {
			reasons[i], messages[i], details[i], retryables[i] = &j.Reason, &j.Message, j.Detail, &j.Retryable
		}
		created[i], updated[i], leases[i], expires[i] = r.CreatedAt, r.UpdatedAt, r.LeaseExpiresAt, r.ExpiresAt
	}
	return []any{consumers, keys, states, digests, tokens, attempts, owners, results,
		reasons, messages, details, retryables, created, updated, leases, expires, versions}
}
