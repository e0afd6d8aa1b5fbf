package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// freshColumns are the columns of a fresh claim that its caller supplies
// (freshArgs); the times are the database's clock plus the durations.
const freshColumns = `consumer, key, state, digest, token, attempts, owner, lease_us, life_us`

// unnestFresh is the table of the arrays of freshArrays, numbered from $1:
// one row per command, as fresh (freshColumns). Nine arrays, four of them
// integers: the caller's part of a fresh record, nothing the database
// decides. A row whose state is NULL is a command that inserts nothing.
const unnestFresh = `unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::BYTEA[], $5::INT8[], $6::INT8[], $7::TEXT[], $8::INT8[], $9::INT8[])
    AS fresh (` + freshColumns + `)`

// insertFreshSelect inserts the fresh claims of the rows of a table "fresh"
// of freshColumns, with the database's clock.
const insertFreshSelect = `INSERT INTO dedup_records (
    consumer, key, state, digest, fencing_token, attempts, owner,
    created_at, updated_at, lease_expires_at, expires_at)
SELECT fresh.consumer, fresh.key, fresh.state, fresh.digest, fresh.token, fresh.attempts, fresh.owner,
    statement_timestamp(), statement_timestamp(),
    statement_timestamp() + fresh.lease_us * INTERVAL '1 microsecond',
    statement_timestamp() + fresh.life_us * INTERVAL '1 microsecond'
FROM `

// readOrInsertSQL is a round's first statement. It inserts first: the
// fresh claim of every key whose command is a claim (state not NULL), ON
// CONFLICT DO NOTHING, so that only a key with no row at all, live or
// expired, gets one (see "Batches" in batch.go for why that row is Apply's
// decision). Then it reads the records of the keys it did not insert. The
// rows it returns: each key inserted, as its consumer and key, the other
// columns NULL (a stored record's state never is); each record found, with
// its version; and when there is neither, one row of NULLs. Every row
// carries the statement's clock, which is the clock the inserted rows'
// times start from.
//
// A fresh poll therefore probes the primary key once per key, in the
// insert's conflict check, and the read joins nothing (PostgreSQL plans the
// anti-join with the inserted keys first); a redelivered poll is that check
// finding every key taken, writing nothing, and the read. A key that
// another writer inserted after the statement's snapshot is neither
// inserted (the conflict check sees it) nor found (the read does not): the
// round counts it a miss and decides it again on the row that is there.
// It runs on PostgreSQL and CockroachDB alike: one data-modifying CTE, and
// a read that leaves out the keys the CTE inserted, so neither database's
// rule on whether a statement sees its own writes matters.
var readOrInsertSQL = `WITH batch AS (
    SELECT ` + freshColumns + ` FROM ` + unnestFresh + `
), inserted AS (
    ` + insertFreshSelect + `batch AS fresh
    WHERE fresh.state IS NOT NULL
    ON CONFLICT (consumer, key) DO NOTHING
    RETURNING consumer, key
), found AS (
    SELECT ` + qualifiedRecord("d") + `, d.row_version
    FROM batch JOIN dedup_records AS d ON d.consumer = batch.consumer AND d.key = batch.key
    WHERE NOT EXISTS (SELECT 1 FROM inserted WHERE inserted.consumer = batch.consumer AND inserted.key = batch.key)
)
SELECT ` + qualifiedRecord("r") + `, r.row_version, statement_timestamp()
FROM (SELECT 1) AS clock
LEFT JOIN (
    SELECT ` + qualifiedRecord("found") + `, found.row_version FROM found
    UNION ALL
    SELECT inserted.consumer, inserted.key` + nulls(recordColumnCount-1) + `
    FROM inserted
) AS r ON true`

// nulls is ", NULL" n times.
func nulls(n int) string { return strings.Repeat(", NULL", n) }

// roundRead is what a round's first statement found: the records of the
// keys that have one, the keys it inserted, and the database's clock.
type roundRead struct {
	found    map[recordKey]versionedRecord
	inserted map[recordKey]bool
	now      time.Time
}

// readOrInsert runs readOrInsertSQL for the commands of cmds named by
// pending, in that order.
func (s *Store) readOrInsert(ctx context.Context, cmds []store.Command, pending []int) (roundRead, error) {
	args := make([]freshArgs, len(pending))
	insertable := make([]bool, len(pending))
	for j, i := range pending {
		if claim, ok := cmds[i].(store.ClaimParams); ok {
			a, err := freshArgsFor(claim)
			args[j], insertable[j] = a, err == nil
		}
		if !insertable[j] {
			args[j].consumer, args[j].key = store.KeyOf(cmds[i])
		}
	}
	arrays := freshArrays(args, insertable)
	rows, err := s.pool.Query(ctx, readOrInsertSQL, append([]any{planEachTime}, arrays...)...)
	if err != nil {
		return roundRead{}, err
	}
	defer rows.Close()
	r := roundRead{found: map[recordKey]versionedRecord{}, inserted: map[recordKey]bool{}}
	var now time.Time
	for rows.Next() {
		switch raw := rows.RawValues(); {
		case raw[0] == nil: // neither found nor inserted: the clock alone
			if err := rows.Scan(append(make([]any, recordColumnCount+1), &now)...); err != nil {
				return roundRead{}, err
			}
		case raw[2] == nil: // no state: a key inserted
			var k recordKey
			dest := append([]any{&k.consumer, &k.key}, make([]any, recordColumnCount-1)...)
			if err := rows.Scan(append(dest, &now)...); err != nil {
				return roundRead{}, err
			}
			r.inserted[k] = true
		default:
			var version int64
			rec, err := scanRecord(rows, &version, &now)
			if err != nil {
				return roundRead{}, err
			}
			r.found[recordKey{rec.Consumer, rec.Key}] = versionedRecord{rec: rec, version: version}
		}
	}
	if err := rows.Err(); err != nil {
		return roundRead{}, err
	}
	r.now = store.Now(now)
	return r, nil
}

// freshArrays are the parameters of unnestFresh: args as parallel arrays,
// the state NULL where insertable is false.
func freshArrays(args []freshArgs, insertable []bool) []any {
	n := len(args)
	var (
		consumers, keys, owners = make([]string, n), make([]string, n), make([]string, n)
		states                  = make([]*string, n)
		digests                 = make([][]byte, n)
		tokens, attempts        = make([]int64, n), make([]int64, n)
		leases, lives           = make([]int64, n), make([]int64, n)
	)
	for i, a := range args {
		consumers[i], keys[i], owners[i] = a.consumer, a.key, a.owner
		if insertable[i] {
			states[i] = &args[i].state
		}
		digests[i], tokens[i], attempts[i] = notNull(a.digest), a.token, a.attempts
		leases[i], lives[i] = a.lease.Microseconds(), a.life.Microseconds()
	}
	return []any{consumers, keys, states, digests, tokens, attempts, owners, leases, lives}
}
