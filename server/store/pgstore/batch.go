package pgstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// Batches (store.Batcher).
//
// A batch is cut into chunks of at most maxChunk commands, and each chunk
// into rounds in which no key appears twice (store.Rounds): a key named
// twice has its second command in the next round, after the first has
// landed. A round is one multi-row read of all its keys, store.Apply on
// each, and one multi-row write of every decided record, fresh and
// existing keys alike (writeRoundSQL), as a compare-and-set per row on
// the version read. Commands whose row changed between the read and the
// write run the round again, alone, as a lone call would after such a
// miss. A round whose keys are all finished (a redelivered poll) is one
// read and no write.

// maxChunk is the most commands read and written in one statement. The
// statements' cost per row is flat well past it; a larger chunk only holds
// more row locks at once.
const maxChunk = 500

// ApplyBatch applies the commands chunk by chunk, round by round.
func (s *Store) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := make([]store.ItemResult, len(p.Commands))
	for start := 0; start < len(p.Commands); start += maxChunk {
		end := min(start+maxChunk, len(p.Commands))
		cmds, res := p.Commands[start:end], results[start:end]
		for _, round := range store.Rounds(cmds) {
			s.applyRound(ctx, cmds, round, res)
		}
	}
	return results
}

// applyRound answers the commands of cmds named by round, which are on
// distinct keys.
func (s *Store) applyRound(ctx context.Context, cmds []store.Command, round []int, results []store.ItemResult) {
	pending := round
	err := s.withRetry(ctx, "batch", func(ctx context.Context) error {
		var err error
		pending, err = s.tryRound(ctx, cmds, pending, results)
		if err == nil && len(pending) > 0 {
			return errConcurrentWrite
		}
		return err
	})
	if err != nil {
		for _, i := range pending {
			results[i] = store.ItemResult{Err: err}
		}
	}
}

// tryRound is one attempt at the commands named by pending: read, decide,
// write. It answers every command it can and returns those still to run:
// the ones whose write missed or failed. An answer from the read alone (a
// refusal, a replay, IN_PROGRESS) stands even if the write then fails, as
// it would for the call alone.
func (s *Store) tryRound(ctx context.Context, cmds []store.Command, pending []int, results []store.ItemResult) ([]int, error) {
	keys := make([]recordKey, len(pending))
	for j, i := range pending {
		keys[j].consumer, keys[j].key = store.KeyOf(cmds[i])
	}
	stored, now, err := s.readKeys(ctx, keys)
	if err != nil {
		return pending, err
	}
	var (
		writes  []versionedRecord
		writing = map[recordKey]int{}
		decided = map[int]store.Decision{}
	)
	for j, i := range pending {
		row, found := stored[keys[j]]
		var rec *store.Record
		if found {
			rec = &row.rec
		}
		d, err := store.Apply(rec, cmds[i], now)
		if err != nil || !d.Write {
			results[i] = store.ResultOf(d, err)
			continue
		}
		decided[i] = d
		writing[keys[j]] = i
		writes = append(writes, versionedRecord{rec: d.Record, version: row.version}) // 0 when absent
	}
	if len(writes) == 0 {
		return nil, nil
	}
	slices.SortFunc(writes, func(a, b versionedRecord) int {
		return store.CompareKeys(a.rec.Consumer, a.rec.Key, b.rec.Consumer, b.rec.Key)
	})
	waiting := make([]int, 0, len(writes))
	for _, w := range writes {
		waiting = append(waiting, writing[recordKey{w.rec.Consumer, w.rec.Key}])
	}
	var present, absent []versionedRecord
	for _, w := range writes {
		if w.version > 0 {
			present = append(present, w)
		} else {
			absent = append(absent, w)
		}
	}
	rows, _ := s.pool.Query(ctx, writeRoundSQL, append(recordArrays(present), recordArrays(absent)...)...)
	written := make(map[recordKey]bool, len(writes))
	var k recordKey
	if _, err := pgx.ForEachRow(rows, []any{&k.consumer, &k.key}, func() error {
		written[k] = true
		return nil
	}); err != nil {
		return waiting, err
	}
	var missed []int
	for _, i := range waiting {
		c, key := store.KeyOf(cmds[i])
		if !written[recordKey{c, key}] {
			missed = append(missed, i)
			continue
		}
		// The row now holds exactly the decided record: every column was
		// written from it, its times already at the stored precision.
		results[i] = store.ResultOf(decided[i], nil)
	}
	return missed, nil
}

// readKeysSQL reads the records of a set of keys, with their versions and
// the database's clock. When none of the keys has a row it still returns
// one row, of NULLs but the clock, so that a batch of fresh claims learns
// the time from the same statement.
var readKeysSQL = `SELECT ` + qualifiedRecord("r") + `, r.row_version, statement_timestamp()
FROM (SELECT 1) AS clock
LEFT JOIN (
    SELECT ` + qualifiedRecord("d") + `, d.row_version FROM unnest($1::TEXT[], $2::TEXT[]) AS u (consumer, key)
    JOIN dedup_records AS d ON d.consumer = u.consumer AND d.key = u.key
) AS r ON true`

// readKeys reads the records of keys, by key, and the database's clock.
func (s *Store) readKeys(ctx context.Context, keys []recordKey) (map[recordKey]versionedRecord, time.Time, error) {
	consumers, names := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		consumers[i], names[i] = k.consumer, k.key
	}
	rows, err := s.pool.Query(ctx, readKeysSQL, consumers, names)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer rows.Close()
	var now time.Time
	stored := make(map[recordKey]versionedRecord, len(keys))
	for rows.Next() {
		if rows.RawValues()[0] == nil { // no key has a row: the clock alone
			if err := rows.Scan(append(make([]any, recordColumnCount+1), &now)...); err != nil {
				return nil, time.Time{}, err
			}
			continue
		}
		var version int64
		rec, err := scanRecord(rows, &version, &now)
		if err != nil {
			return nil, time.Time{}, err
		}
		stored[recordKey{rec.Consumer, rec.Key}] = versionedRecord{rec: rec, version: version}
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	return stored, store.Now(now), nil
}

// writeRoundSQL writes decided records in one statement: those of keys
// read as present ($1..$17) as a compare-and-set UPDATE on the version
// read, those of keys read as absent ($18..$34) as an INSERT ... ON
// CONFLICT DO NOTHING. A row changed or deleted since the read, or inserted
// meanwhile, is left alone. Each part takes its rows in the order given,
// which the caller sorts by key, and the updates come before the inserts
// in every statement, so overlapping rounds queue instead of deadlocking.
// Only the keys written come back.
var writeRoundSQL = `WITH updated AS (
` + updateFromArrays(1) + `
    RETURNING r.consumer, r.key
), inserted AS (
    INSERT INTO dedup_records (` + recordColumns + `)
    SELECT ` + qualifiedRecord("u") + `
    FROM ` + unnestRecords(18) + `
    ON CONFLICT (consumer, key) DO NOTHING
    RETURNING consumer, key
)
SELECT consumer, key FROM updated
UNION ALL
SELECT consumer, key FROM inserted`

// LookupBatch reads every key in one statement per chunk.
func (s *Store) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := make([]store.LookupResult, len(p.Keys))
	for start := 0; start < len(p.Keys); start += maxChunk {
		end := min(start+maxChunk, len(p.Keys))
		keys := make([]recordKey, 0, end-start)
		for _, k := range p.Keys[start:end] {
			keys = append(keys, recordKey{p.Consumer, k})
		}
		var (
			stored map[recordKey]versionedRecord
			now    time.Time
		)
		err := s.withRetry(ctx, "lookup", func(ctx context.Context) error {
			var err error
			stored, now, err = s.readKeys(ctx, keys)
			return err
		})
		for j, k := range keys {
			row, found := stored[k]
			switch {
			case err != nil:
				results[start+j].Err = err
			case !found || !store.IsLive(&row.rec, now):
				results[start+j].Err = store.ErrNotFound
			default:
				results[start+j].Record = row.rec
			}
		}
	}
	return results
}

// recordColumnCount is the number of columns in recordColumns.
var recordColumnCount = strings.Count(recordColumns, ",") + 1
