package pgstore

import (
	"context"
	"slices"

	"github.com/dedupd/dedupd/server/store"
)

// The finish of a holder on time in one statement: a Complete or Reject
// whose key holds a live Pending record at the command's fencing token is
// written by an UPDATE guarded by exactly that (store.HeldBy), with the
// columns store.HeldFinishOf decided and the database's clock, without
// reading the row first. A row the guard does not match is not written,
// and its call is decided by reading, as before. Nearly every finish is a
// holder's on time, so a group of them costs one statement instead of a
// read and a write.

// finishHeldSQL is that UPDATE for parallel arrays, a row per call (the
// times as microseconds from the statement's clock); the rows it wrote
// come back. The state the guard asks for is a column of u, not the
// literal 'PENDING': with the literal, the planner proves the partial
// index dedup_records_pending_lease usable and scans a consumer's whole
// pending set for each row (measured: 10 ms of database time per finish
// with 100,000 keys pending). TestHeldFinishProbesThePrimaryKey holds it to
// the primary key. The guard reads the clock when it looks at the row
// (clock_timestamp()), not when the statement began: a DeleteRecord that
// committed while this waited on its row lock made the record expire at
// a time after the statement's start.
var finishHeldSQL = `UPDATE dedup_records AS r SET
    state = u.state, result = u.result, rejection_reason = u.reason, rejection_message = u.message,
    rejection_detail = u.detail, rejection_retryable = u.retryable,
    updated_at = statement_timestamp() + u.updated_us * INTERVAL '1 microsecond',
    expires_at = statement_timestamp() + u.expires_us * INTERVAL '1 microsecond',
    row_version = r.row_version + 1
FROM unnest($1::TEXT[], $2::TEXT[], $3::INT8[], $4::TEXT[], $5::BYTEA[], $6::TEXT[], $7::TEXT[],
            $8::BYTEA[], $9::BOOL[], $10::INT8[], $11::INT8[], $12::TEXT[])
    AS u (consumer, key, token, state, result, reason, message, detail, retryable, updated_us, expires_us, held)
WHERE r.consumer = u.consumer AND r.key = u.key
  AND r.state = u.held AND r.fencing_token = u.token AND r.expires_at > clock_timestamp()
RETURNING ` + qualifiedRecord("r")

// heldCall is a call with its held finish.
type heldCall struct {
	c *call[finishCall, finishResult]
	f store.HeldFinish
}

// finishHeld writes the held finishes among calls (on distinct keys) in
// one statement and answers those it wrote. It returns the calls left to
// decide by reading: those with no held finish, and those whose row the
// guard did not match. When the database refused the statement, which then
// wrote nothing (a lock timeout, say), every call is left to reading, so
// that a call the read refuses gets its refusal, as it would alone, not
// the error of another caller's row. When the outcome is unknown (the
// connection broke, SQLSTATE 40003), the held calls get the error, which
// says so, and nothing is sent again.
func (s *Store) finishHeld(ctx context.Context, calls []*call[finishCall, finishResult]) []*call[finishCall, finishResult] {
	var held []heldCall
	var rest []*call[finishCall, finishResult]
	for _, c := range calls {
		if f, ok := store.HeldFinishOf(c.req.cmd); ok {
			held = append(held, heldCall{c, f})
		} else {
			rest = append(rest, c)
		}
	}
	if len(held) == 0 {
		return rest
	}
	// One global key order, as every multi-row write takes its rows.
	slices.SortFunc(held, func(a, b heldCall) int {
		return store.CompareKeys(a.c.req.consumer, a.c.req.key, b.c.req.consumer, b.c.req.key)
	})
	var written map[recordKey]store.Record
	err := s.withRetry(ctx, held[0].c.req.op, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, finishHeldSQL, append([]any{planEachTime}, heldArrays(held)...)...)
		if err != nil {
			return err
		}
		written, err = collectWritten(rows)
		return err
	})
	if err != nil {
		if wroteNothing(err) {
			return calls
		}
		for _, h := range held {
			h.c.err = err
		}
		return rest
	}
	for _, h := range held {
		if rec, ok := written[recordKey{h.c.req.consumer, h.c.req.key}]; ok {
			h.c.resp = finishResult{d: store.Decision{Record: rec, Write: true}}
		} else {
			rest = append(rest, h.c)
		}
	}
	return rest
}

// heldArrays are the parameters of finishHeldSQL.
func heldArrays(held []heldCall) []any {
	n := len(held)
	var (
		consumers, keys, states  = make([]string, n), make([]string, n), make([]string, n)
		helds                    = make([]string, n)
		tokens, updated, expires = make([]int64, n), make([]int64, n), make([]int64, n)
		results, details         = make([][]byte, n), make([][]byte, n)
		reasons, messages        = make([]*string, n), make([]*string, n)
		retryables               = make([]*bool, n)
	)
	for i, h := range held {
		consumers[i], keys[i], states[i], helds[i] = h.c.req.consumer, h.c.req.key, string(h.f.State), string(store.Pending)
		tokens[i], results[i] = h.f.Token, h.f.Result
		updated[i], expires[i] = h.f.Updated.Microseconds(), h.f.Expires.Microseconds()
		if j := h.f.Rejection; j != nil {
			reasons[i], messages[i], details[i], retryables[i] = &j.Reason, &j.Message, j.Detail, &j.Retryable
		}
	}
	return []any{consumers, keys, tokens, states, results, reasons, messages, details, retryables, updated, expires, helds}
}
