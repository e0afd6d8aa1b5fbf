package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// The insert of fresh claims, shared by a batch's round and by group
// commit's claims. It is a prepared statement, planned once per session
// and then run from a generic plan, unlike the statements that join
// dedup_records to arrays (planEachTime): its plan reads no table, so
// there is no access path that could go bad as the table grows. The rows
// come from unnest, and the only look-up of dedup_records is the conflict
// check, which always probes the arbiter index, the primary key.
// TestFreshInsertPlanReadsNoTable holds both forms to that.
//
// ON CONFLICT DO NOTHING, so that only a key with no row at all, live or
// expired, gets one (see "Batches" in batch.go for why that row is Apply's
// decision). It returns the keys it inserted, each with the statement's
// clock, which the inserted rows' times start from: each row is Apply's
// record at that clock (freshRecord).
//
// Parameters, in both forms: $1 consumer, $2 key, $3 state, $4 digest,
// $5 fencing token, $6 attempts, $7 owner, $8 and $9 the lease and the
// retention in microseconds from the clock. In insertFreshSQL every one
// is an array, a row per claim; in insertSharedFreshSQL only the keys and
// digests are, and the rest, which the claims of one poll share, are one
// value each: two arrays to encode, send and unnest instead of nine
// (measured: about a sixth of the database's CPU per key).
var (
	insertFreshSQL = insertFreshFrom(
		`unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::BYTEA[], $5::INT8[], $6::INT8[], $7::TEXT[], $8::INT8[], $9::INT8[])
    AS fresh (consumer, key, state, digest, token, attempts, owner, lease_us, life_us)`,
		"fresh.consumer", "fresh.state", "fresh.token", "fresh.attempts", "fresh.owner", "fresh.lease_us", "fresh.life_us")
	insertSharedFreshSQL = insertFreshFrom(
		`unnest($2::TEXT[], $4::BYTEA[]) AS fresh (key, digest)`,
		"$1::TEXT", "$3::TEXT", "$5::INT8", "$6::INT8", "$7::TEXT", "$8::INT8", "$9::INT8")
)

// insertFreshFrom is the insert of fresh claims whose keys and digests
// are the rows of from, a table "fresh" of (key, digest, ...), and whose
// other columns are the expressions given.
func insertFreshFrom(from, consumer, state, token, attempts, owner, leaseUS, lifeUS string) string {
	return `INSERT INTO dedup_records (
    consumer, key, state, digest, fencing_token, attempts, owner,
    created_at, updated_at, lease_expires_at, expires_at)
SELECT ` + consumer + `, fresh.key, ` + state + `, fresh.digest, ` + token + `, ` + attempts + `, ` + owner + `,
    statement_timestamp(), statement_timestamp(),
    statement_timestamp() + ` + leaseUS + ` * INTERVAL '1 microsecond',
    statement_timestamp() + ` + lifeUS + ` * INTERVAL '1 microsecond'
FROM ` + from + `
ON CONFLICT (consumer, key) DO NOTHING
RETURNING consumer, key, statement_timestamp()`
}

// insertFresh inserts fresh claims with distinct keys in one statement
// and returns the keys it inserted, with the database's clock they were
// inserted at (the same for all).
func (s *Store) insertFresh(ctx context.Context, rows []freshArgs) (map[recordKey]time.Time, error) {
	sql, args := insertFreshSQL, freshArrays(rows)
	if shared(rows) {
		sql, args = insertSharedFreshSQL, sharedFreshArgs(rows)
	}
	result, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	inserted := make(map[recordKey]time.Time, len(rows))
	var (
		k  recordKey
		at time.Time
	)
	if _, err := pgx.ForEachRow(result, []any{&k.consumer, &k.key, &at}, func() error {
		inserted[k] = store.Now(at)
		return nil
	}); err != nil {
		return nil, err
	}
	return inserted, nil
}

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
		inserted, err := s.insertFresh(ctx, fresh)
		if err != nil {
			return roundRead{}, err
		}
		s.commits.Commit(commitmetrics.KindPoll, len(fresh))
		for k, at := range inserted {
			r.inserted[k], r.insertedAt = true, at
		}
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

// freshArrays are the parameters of insertFreshSQL: args as parallel
// arrays.
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

// shared reports whether rows differ only in their keys and digests, as
// the claims of one poll do, so that insertSharedFreshSQL can take them.
func shared(rows []freshArgs) bool {
	first := rows[0]
	for _, a := range rows[1:] {
		if a.consumer != first.consumer || a.state != first.state || a.owner != first.owner ||
			a.token != first.token || a.attempts != first.attempts ||
			a.lease.Microseconds() != first.lease.Microseconds() || a.life.Microseconds() != first.life.Microseconds() {
			return false
		}
	}
	return true
}

// sharedFreshArgs are the parameters of insertSharedFreshSQL for rows,
// which shared accepts.
func sharedFreshArgs(rows []freshArgs) []any {
	keys, digests := make([]string, len(rows)), make([][]byte, len(rows))
	for i, a := range rows {
		keys[i], digests[i] = a.key, notNull(a.digest)
	}
	a := rows[0]
	return []any{a.consumer, keys, a.state, digests, a.token, a.attempts, a.owner, a.lease.Microseconds(), a.life.Microseconds()}
}
