package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// freshColumns are the columns of a fresh claim that its caller supplies
// (freshArgs); the times are the database's clock plus the durations.
const freshColumns = `consumer, key, state, digest, token, attempts, owner, lease_us, life_us`

// unnestFresh is the table of the arrays of freshArrays, numbered from $1:
// one row per fresh claim, as fresh (freshColumns). Nine arrays, four of
// them integers: the caller's part of a fresh record, nothing the database
// decides.
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

// insertFreshKeysSQL is a round's first statement: the fresh claim of
// every claimed key, ON CONFLICT DO NOTHING, so that only a key with no
// row at all, live or expired, gets one (see "Batches" in batch.go for why
// that row is Apply's decision). It returns the keys it inserted, each
// with the statement's clock, which the inserted rows' times start from.
//
// It is a prepared statement, planned once per session and then run from
// a generic plan, unlike the statements that join dedup_records to arrays
// (planEachTime): its plan reads no table, so there is no access path that
// could go bad as the table grows. The arrays are scanned by unnest, and
// the only look-up of dedup_records is the conflict check, which always
// probes the arbiter index, the primary key. TestFreshInsertPlanReadsNoTable
// holds it to that.
const insertFreshKeysSQL = insertFreshSelect + unnestFresh + `
ON CONFLICT (consumer, key) DO NOTHING
RETURNING consumer, key, statement_timestamp()`

// roundRead is what a round's statements found: the keys inserted, with
// the clock of their insert, and the records of the other keys, with the
// clock of their read.
type roundRead struct {
	inserted   map[recordKey]bool
	insertedAt time.Time
	found      map[recordKey]versionedRecord
	now        time.Time
}

// readOrInsert inserts the fresh claims among the commands of cmds named
// by pending (in that order), then reads the records of the keys it did
// not insert. A fresh poll is therefore the one prepared insert; a poll of
// keys that exist is that insert finding every key taken, writing nothing,
// and the read. A key that another writer inserted meanwhile is not
// inserted (the conflict check waits for that writer and sees its row);
// the read finds it, or, if it is gone again, the round counts it a miss
// and decides it again.
func (s *Store) readOrInsert(ctx context.Context, cmds []store.Command, pending []int) (roundRead, error) {
	r := roundRead{inserted: map[recordKey]bool{}}
	var fresh []freshArgs
	for _, i := range pending {
		if claim, ok := cmds[i].(store.ClaimParams); ok {
			if a, err := freshArgsFor(claim); err == nil {
				fresh = append(fresh, a)
			}
		}
	}
	if len(fresh) > 0 {
		inserted, at, err := s.insertFreshKeys(ctx, fresh)
		if err != nil {
			return roundRead{}, err
		}
		r.inserted, r.insertedAt = inserted, at
	}
	var rest []recordKey
	for _, i := range pending {
		c, key := store.KeyOf(cmds[i])
		if k := (recordKey{c, key}); !r.inserted[k] {
			rest = append(rest, k)
		}
	}
	if len(rest) == 0 {
		return r, nil
	}
	found, now, err := s.readKeys(ctx, rest)
	if err != nil {
		return roundRead{}, err
	}
	r.found, r.now = found, now
	return r, nil
}

// insertFreshKeys runs insertFreshKeysSQL for fresh, whose keys are
// distinct, and returns the keys inserted and the statement's clock (zero
// when it inserted none).
func (s *Store) insertFreshKeys(ctx context.Context, fresh []freshArgs) (map[recordKey]bool, time.Time, error) {
	rows, err := s.pool.Query(ctx, insertFreshKeysSQL, freshArrays(fresh)...)
	if err != nil {
		return nil, time.Time{}, err
	}
	inserted := make(map[recordKey]bool, len(fresh))
	var (
		k   recordKey
		now time.Time
	)
	if _, err := pgx.ForEachRow(rows, []any{&k.consumer, &k.key, &now}, func() error {
		inserted[k] = true
		return nil
	}); err != nil {
		return nil, time.Time{}, err
	}
	return inserted, store.Now(now), nil
}

// freshArrays are the parameters of unnestFresh: args as parallel arrays.
func freshArrays(args []freshArgs) []any {
	n := len(args)
	var (
		consumers, keys, owners = make([]string, n), make([]string, n), make([]string, n)
		states                  = make([]string, n)
		digests                 = make([][]byte, n)
		tokens, attempts        = make([]int64, n), make([]int64, n)
		leases, lives           = make([]int64, n), make([]int64, n)
	)
	for i, a := range args {
		consumers[i], keys[i], owners[i], states[i] = a.consumer, a.key, a.owner, a.state
		digests[i], tokens[i], attempts[i] = notNull(a.digest), a.token, a.attempts
		leases[i], lives[i] = a.lease.Microseconds(), a.life.Microseconds()
	}
	return []any{consumers, keys, states, digests, tokens, attempts, owners, leases, lives}
}
