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
// landed. A round is one prepared statement that inserts the fresh claim
// of each claimed key that has no row (insertFreshKeysSQL), then, for the
// keys it did not insert, one read of their records (readKeysSQL); then
// store.Apply on each key found, at the read's clock, and one
// compare-and-set UPDATE of the records it decided to change (on the
// version read). So a fresh poll is one statement, a redelivered poll of
// finished keys is the insert writing nothing and the read, and only a
// poll with keys to take over or finish needs a third. Commands whose row
// changed between the read and the write, or vanished between the insert
// and the read, run the round again, alone, as a lone call would after
// such a miss.
//
// Why inserting before Apply has seen the row is still Apply's decision:
// for a key with no row, Apply's answer to a claim does not depend on the
// clock except through the times it sets, each the clock plus a duration
// (store.Apply: acquireFresh). freshArgsFor asks Apply for that answer at
// a fixed origin and keeps the durations; the insert adds them to its own
// clock, which it also returns, so the row inserted is exactly
// Apply(nil, claim, that clock), which is what the round answers. ON
// CONFLICT DO NOTHING leaves every key that has a row alone, so a row is
// inserted only where Apply would have been given none; a key that
// another writer inserted meanwhile is read, and decided on the row that
// is there. Any other command of a key with no row is refused by Apply,
// whatever the clock, so it needs no write. TestFreshBatchIsApply holds the rows to
// that model.

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

// tryRound is one attempt at the commands named by pending: read and
// insert the fresh claims, decide, write the rest. It answers every
// command it can and returns those still to run: the ones whose write
// missed or failed. An answer from the read alone (a refusal, a replay,
// IN_PROGRESS) stands even if the write then fails, as it would for the
// call alone.
func (s *Store) tryRound(ctx context.Context, cmds []store.Command, pending []int, results []store.ItemResult) ([]int, error) {
	// Keys are taken in one global order, so that rounds inserting or
	// updating overlapping keys queue instead of deadlocking.
	pending = slices.Clone(pending)
	slices.SortFunc(pending, func(a, b int) int {
		ca, ka := store.KeyOf(cmds[a])
		cb, kb := store.KeyOf(cmds[b])
		return store.CompareKeys(ca, ka, cb, kb)
	})
	r, err := s.readOrInsert(ctx, cmds, pending)
	if err != nil {
		return pending, err
	}
	var (
		writes  []versionedRecord
		waiting []int
		decided = map[int]store.Decision{}
		missed  []int
	)
	for _, i := range pending {
		c, key := store.KeyOf(cmds[i])
		k := recordKey{c, key}
		row, found := r.found[k]
		var rec *store.Record
		if found {
			rec = &row.rec
		}
		now := r.now
		if r.inserted[k] {
			now = r.insertedAt
		}
		d, err := store.Apply(rec, cmds[i], now)
		switch {
		case r.inserted[k]:
			// The row holds Apply(nil, cmd, r.insertedAt): see the comment
			// on batches above.
			results[i] = store.ResultOf(d, err)
		case err != nil || !d.Write:
			results[i] = store.ResultOf(d, err)
		case !found:
			// Absent when read, yet not inserted: another writer inserted
			// the key in between. Decide again on its row.
			missed = append(missed, i)
		default:
			decided[i] = d
			waiting = append(waiting, i)
			writes = append(writes, versionedRecord{rec: d.Record, version: row.version})
		}
	}
	if len(writes) == 0 {
		return missed, nil
	}
	rows, _ := s.pool.Query(ctx, updateRoundSQL, append([]any{planEachTime}, recordArrays(writes)...)...)
	written := make(map[recordKey]bool, len(writes))
	var k recordKey
	if _, err := pgx.ForEachRow(rows, []any{&k.consumer, &k.key}, func() error {
		written[k] = true
		return nil
	}); err != nil {
		return append(missed, waiting...), err
	}
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

// planEachTime runs a statement that joins dedup_records to unnest(...)
// arrays as an unnamed statement, which PostgreSQL plans with the values
// in hand every time, instead of as a cached prepared statement. A cached
// statement gets a generic plan after five runs, and a generic plan made
// while the table was small (a fresh database, or one whose statistics
// autovacuum has not refreshed) joins by scanning the whole table, and
// keeps doing so as the table grows: measured at about 2 ms of database
// CPU per finished call on 60,000 rows, against 0.2 ms planned each time.
// Planning is paid once a statement, shared by every row of its batch.
// Single-row statements stay prepared: a primary-key lookup is their only
// sensible plan at any table size.
const planEachTime = pgx.QueryExecModeCacheDescribe

// readKeysSQL reads the records of a set of keys, with their versions and
// the database's clock. When none of the keys has a row it still returns
// one row, of NULLs but the clock, so that the caller learns the time from
// the same statement.
//
// Each key is looked up in a LATERAL subquery that OFFSET 0 keeps from
// being flattened into a join, so the plan is a nested loop over the keys
// whose only choice is how to find one key's row: the primary key, or a
// scan of the whole table per key, which costs more than the probe at any
// size but the tiniest. As a plain join, PostgreSQL planned a hash join
// over a scan of the whole table once it held some 10^4 rows with no
// statistics (measured: 42 against 13 µs of database CPU per key of a
// redelivered poll at 24,000 rows). TestReadKeysProbesThePrimaryKey holds
// it to the probe.
var readKeysSQL = `SELECT ` + qualifiedRecord("r") + `, r.row_version, statement_timestamp()
FROM (SELECT 1) AS clock
LEFT JOIN (
    SELECT ` + qualifiedRecord("d") + `, d.row_version FROM unnest($1::TEXT[], $2::TEXT[]) AS u (consumer, key)
    CROSS JOIN LATERAL (
        SELECT ` + recordColumns + `, row_version FROM dedup_records
        WHERE dedup_records.consumer = u.consumer AND dedup_records.key = u.key OFFSET 0
    ) AS d
) AS r ON true`

// readKeys reads the records of keys, by key, and the database's clock.
func (s *Store) readKeys(ctx context.Context, keys []recordKey) (map[recordKey]versionedRecord, time.Time, error) {
	consumers, names := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		consumers[i], names[i] = k.consumer, k.key
	}
	rows, err := s.pool.Query(ctx, readKeysSQL, planEachTime, consumers, names)
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

// updateRoundSQL writes the records decided for keys read as present, as
// a compare-and-set on the version read; a row changed or deleted since
// is left alone. It takes its rows in the order given, which tryRound
// sorts by key. Only the keys written come back.
var updateRoundSQL = updateFromArrays(1) + `
RETURNING r.consumer, r.key`

// LookupBatch reads every key in one statement per chunk.
func (s *Store) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := make([]store.LookupResult, len(p.Keys))
	if len(p.Keys) == 1 {
		results[0].Record, results[0].Err = s.lookup(ctx, p.Consumer, p.Keys[0])
		return results
	}
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
