package pgstore

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// The SQL of the store. It keeps to what PostgreSQL and CockroachDB both run
// with the same meaning: INSERT ... ON CONFLICT ... RETURNING, SELECT ... FOR
// UPDATE, and statement_timestamp() as the clock (now() is the transaction's
// start, which a transaction that waited on a lock has long passed).
const (
	recordColumns = `consumer, key, state, digest, fencing_token, attempts, owner, result,
    rejection_reason, rejection_message, rejection_detail, rejection_retryable,
    created_at, updated_at, lease_expires_at, expires_at`

	// insertFreshClaimSQL is the whole of a claim of a free key. The times
	// are the database's; $8 and $9 are the lease and the retention that
	// store.Apply decided, as intervals from that time.
	insertFreshClaimSQL = `INSERT INTO dedup_records (
    consumer, key, state, digest, fencing_token, attempts, owner,
    created_at, updated_at, lease_expires_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7,
    statement_timestamp(), statement_timestamp(),
    statement_timestamp() + $8::INTERVAL, statement_timestamp() + $9::INTERVAL)
ON CONFLICT (consumer, key) DO NOTHING
RETURNING ` + recordColumns

	selectForUpdateSQL = `SELECT ` + recordColumns + `, statement_timestamp()
FROM dedup_records WHERE consumer = $1 AND key = $2
FOR UPDATE`

	selectClockSQL = `SELECT statement_timestamp()`

	// writeRecordSQL stores the record store.Apply decided. Inside the
	// SERIALIZABLE transaction that read the key, the conflict branch can
	// only meet the row that transaction locked; a row inserted by someone
	// else meanwhile makes the transaction fail with 40001 and retry.
	writeRecordSQL = `INSERT INTO dedup_records (` + recordColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (consumer, key) DO UPDATE SET
    state = excluded.state,
    digest = excluded.digest,
    fencing_token = excluded.fencing_token,
    attempts = excluded.attempts,
    owner = excluded.owner,
    result = excluded.result,
    rejection_reason = excluded.rejection_reason,
    rejection_message = excluded.rejection_message,
    rejection_detail = excluded.rejection_detail,
    rejection_retryable = excluded.rejection_retryable,
    created_at = excluded.created_at,
    updated_at = excluded.updated_at,
    lease_expires_at = excluded.lease_expires_at,
    expires_at = excluded.expires_at
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
	var (
		r                       store.Record
		state                   string
		reason, message         *string
		detail                  []byte
		retryable               *bool
		created, updated, lease time.Time
		expires                 time.Time
	)
	dest := append([]any{
		&r.Consumer, &r.Key, &state, &r.Digest, &r.FencingToken, &r.Attempts, &r.Owner, &r.Result,
		&reason, &message, &detail, &retryable,
		&created, &updated, &lease, &expires,
	}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Record{}, err
	}
	r.State = store.State(state)
	// The rejection columns are written together; retryable is never NULL
	// when a rejection is stored, whatever the other fields hold.
	if retryable != nil {
		r.Rejection = &store.Rejection{
			Reason:    deref(reason),
			Message:   deref(message),
			Detail:    detail,
			Retryable: *retryable,
		}
	}
	r.CreatedAt = store.Now(created)
	r.UpdatedAt = store.Now(updated)
	r.LeaseExpiresAt = store.Now(lease)
	r.ExpiresAt = store.Now(expires)
	return r, nil
}

// recordArgs are the parameters of writeRecordSQL, in recordColumns order.
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
