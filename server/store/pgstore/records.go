package pgstore

import (
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// The SQL of the store. It keeps to what PostgreSQL and CockroachDB both run
// with the same meaning: single statements, INSERT ... ON CONFLICT DO
// NOTHING RETURNING, UPDATE ... RETURNING, and statement_timestamp() as the
// clock.
const (
	recordColumns = `consumer, key, state, digest, fencing_token, attempts, owner, result,
    rejection_reason, rejection_message, rejection_detail, rejection_retryable,
    created_at, updated_at, lease_expires_at, expires_at`

	// insertFreshClaimSQL is the whole of a claim of a free key. The times
	// are the database's; $8 and $9 are the lease and the retention that
	// store.Apply decided, as intervals from that time. It returns only
	// that time: the row is Apply's record at it (freshRecord).
	insertFreshClaimSQL = `INSERT INTO dedup_records (
    consumer, key, state, digest, fencing_token, attempts, owner,
    created_at, updated_at, lease_expires_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7,
    statement_timestamp(), statement_timestamp(),
    statement_timestamp() + $8::INTERVAL, statement_timestamp() + $9::INTERVAL)
ON CONFLICT (consumer, key) DO NOTHING
RETURNING statement_timestamp()`

	// selectVersionedSQL reads a record for a compare-and-set write, with
	// the version that write must find and the database's clock.
	selectVersionedSQL = `SELECT ` + recordColumns + `, row_version, statement_timestamp()
FROM dedup_records WHERE consumer = $1 AND key = $2`

	selectClockSQL = `SELECT statement_timestamp()`

	// insertDecidedSQL writes the record store.Apply decided for a key that
	// had none; no row back means someone else inserted it first.
	insertDecidedSQL = `INSERT INTO dedup_records (` + recordColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (consumer, key) DO NOTHING
RETURNING ` + recordColumns

	// updateDecidedSQL writes the record store.Apply decided if the row is
	// still the version Apply saw ($17); no row back means it changed.
	updateDecidedSQL = `UPDATE dedup_records SET
    state = $3, digest = $4, fencing_token = $5, attempts = $6, owner = $7, result = $8,
    rejection_reason = $9, rejection_message = $10, rejection_detail = $11, rejection_retryable = $12,
    created_at = $13, updated_at = $14, lease_expires_at = $15, expires_at = $16,
    row_version = row_version + 1
WHERE consumer = $1 AND key = $2 AND row_version = $17
RETURNING ` + recordColumns

	lookupSQL = `SELECT ` + recordColumns + `, statement_timestamp()
FROM dedup_records WHERE consumer = $1 AND key = $2`

	// deleteExpiredSQL bounds the batch with a subquery, since neither
	// database runs the other's DELETE ... LIMIT. The outer predicate is
	// checked again on the row being deleted, so a record that a claim
	// revived after the subquery picked it survives.
	deleteExpiredSQL = `DELETE FROM dedup_records
WHERE expires_at <= now()
  AND (consumer, key) IN (
    SELECT consumer, key FROM dedup_records WHERE expires_at <= now() LIMIT $1)`
)

// scanRecord reads one row of recordColumns, followed by the destinations in
// extra, into a Record with times normalised to store.Now.
func scanRecord(row pgx.Row, extra ...any) (store.Record, error) {
	// The scan targets live in one struct: pgx takes them as pointers in a
	// []any, so each separate local would be a heap allocation of its own.
	var t struct {
		r                       store.Record
		state                   string
		reason, message         *string
		detail                  []byte
		retryable               *bool
		created, updated, lease time.Time
		expires                 time.Time
		dest                    [16]any
	}
	t.dest = [16]any{
		&t.r.Consumer, &t.r.Key, &t.state, &t.r.Digest, &t.r.FencingToken, &t.r.Attempts, &t.r.Owner, &t.r.Result,
		&t.reason, &t.message, &t.detail, &t.retryable,
		&t.created, &t.updated, &t.lease, &t.expires,
	}
	dest := t.dest[:]
	if len(extra) > 0 {
		dest = append(slices.Clip(dest), extra...)
	}
	if err := row.Scan(dest...); err != nil {
		return store.Record{}, err
	}
	r := t.r
	r.State = store.State(t.state)
	// The rejection columns are written together; retryable is never NULL
	// when a rejection is stored, whatever the other fields hold.
	if t.retryable != nil {
		r.Rejection = &store.Rejection{
			Reason:    deref(t.reason),
			Message:   deref(t.message),
			Detail:    t.detail,
			Retryable: *t.retryable,
		}
	}
	r.CreatedAt = store.Now(t.created)
	r.UpdatedAt = store.Now(t.updated)
	r.LeaseExpiresAt = store.Now(t.lease)
	r.ExpiresAt = store.Now(t.expires)
	return r, nil
}

// recordArgs are the parameters of insertDecidedSQL and updateDecidedSQL,
// in recordColumns order.
func recordArgs(r store.Record) []any {
	var (
		reason, message *string
		detail          []byte
		retryable       *bool
	)
	if rej := r.Rejection; rej != nil {
		reason, message, detail, retryable = &rej.Reason, &rej.Message, rej.Detail, &rej.Retryable
	}
	return []any{
		r.Consumer, r.Key, string(r.State), notNull(r.Digest), r.FencingToken, r.Attempts, r.Owner, r.Result,
		reason, message, detail, retryable,
		r.CreatedAt, r.UpdatedAt, r.LeaseExpiresAt, r.ExpiresAt,
	}
}

// notNull stores a missing digest as an empty one: the column is NOT NULL
// and pgx sends a nil slice as NULL.
func notNull(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
