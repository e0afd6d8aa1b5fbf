package pgstore

import (
	"context"
	"slices"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// Group commit of stream writes.
//
// The read-free writes of streams (streamwrite.go) that wait while others
// are being written go together (batcher.go): the batch's writes of
// streams the store remembers in one multi-row compare-and-set UPDATE, its
// writes of streams taken as absent in one multi-row INSERT ... ON
// CONFLICT DO NOTHING, each statement returning every row it wrote and, for
// every other stream of the batch, the row as it read it
// (streambatchsql.go). Two statements, not one, because neither
// CockroachDB nor PostgreSQL let one statement modify a table twice.
//
// Batching never changes an answer. Each write was planned alone, by
// planStreamWrite on its own expected row (ApplyStream's decision), and a
// row lands only under the same conditions as its single-row statement's;
// a write that did not land gets the row the statement read, and its
// caller goes on from it (compareAndSetFrom), as after a single-row miss. A
// stream named twice in one batch goes in once: the later writes, planned
// on the row the first one replaces, get no row and take the plain path
// (read, ApplyStream, compare-and-set) once the batch has landed, as if
// they had arrived just after it.

type streamWriteBatcher = batcher[streamWrite, streamWriteResult]

func (s *Store) newStreamWriteBatcher(maxBatch int) *streamWriteBatcher {
	return newBatcher(maxBatch, maxInFlight, s.writeStreams, func(n int) { s.commits.Commit(commitmetrics.KindStream, n) })
}

// writeStreams answers a batch of read-free stream writes: the single-row
// statement for one, the multi-row ones for more.
func (s *Store) writeStreams(ctx context.Context, batch []*call[streamWrite, streamWriteResult]) {
	ctx, span := storetrace.StartBatch(ctx, "pgstore.stream_batch", len(batch),
		func(i int) (context.Context, string) { return batch[i].ctx, batch[i].req.key.consumer })
	defer storetrace.EndBatch(span, len(batch), func(i int) error { return batch[i].err })
	if len(batch) == 1 {
		c := batch[0]
		c.resp, c.err = s.writeStreamOne(ctx, c.req)
		return
	}
	seen := make(map[recordKey]bool, len(batch))
	var updates, inserts []*call[streamWrite, streamWriteResult]
	for _, c := range batch {
		c.resp = streamWriteResult{}
		switch {
		case seen[c.req.key]:
			// Not tried: the plain path, after the batch.
		case c.req.expected != nil:
			updates = append(updates, c)
		default:
			inserts = append(inserts, c)
		}
		seen[c.req.key] = true
	}
	s.writeStreamsWith(ctx, insertStreamsFreshSQL, inserts)
	s.writeStreamsWith(ctx, updateStreamsAsCachedSQL, updates)
}

// writeStreamsWith writes calls, on distinct streams, in one multi-row
// statement, and sets each call's answer.
func (s *Store) writeStreamsWith(ctx context.Context, sql string, calls []*call[streamWrite, streamWriteResult]) {
	if len(calls) == 0 {
		return
	}
	// Rows are locked in one global key order, so concurrent batches queue
	// instead of deadlocking (see writeFreshClaims).
	slices.SortFunc(calls, func(a, b *call[streamWrite, streamWriteResult]) int {
		return store.CompareKeys(a.req.key.consumer, a.req.key.key, b.req.key.consumer, b.req.key.key)
	})
	rows := make([][]any, len(calls))
	for i, c := range calls {
		rows[i] = c.req.args
	}
	arrays := columnArrays(rows)
	var returned map[recordKey]streamWriteResult
	err := s.withRetry(ctx, calls[0].req.op, func(ctx context.Context) error {
		var err error
		returned, err = s.queryStreamWrites(ctx, sql, arrays, calls)
		return err
	})
	for _, c := range calls {
		c.resp, c.err = returned[c.req.key], err
	}
}

// queryStreamWrites runs one multi-row write and returns, by stream, what
// it did for each call it returned a row for.
func (s *Store) queryStreamWrites(ctx context.Context, sql string, arrays []any,
	calls []*call[streamWrite, streamWriteResult]) (map[recordKey]streamWriteResult, error) {
	byKey := make(map[recordKey]*streamWrite, len(calls))
	for _, c := range calls {
		byKey[c.req.key] = &c.req
	}
	rows, err := s.pool.Query(ctx, sql, arrays...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	returned := make(map[recordKey]streamWriteResult, len(calls))
	for rows.Next() {
		var (
			version int64
			written bool
			now     time.Time
		)
		row, err := scanStream(rows, &version, &written, &now)
		if err != nil {
			return nil, err
		}
		s.clock.saw(now)
		k := recordKey{row.Consumer, row.Stream}
		if w, ok := byKey[k]; ok {
			returned[k] = w.result(row, version, written, now)
		}
	}
	return returned, rows.Err()
}
