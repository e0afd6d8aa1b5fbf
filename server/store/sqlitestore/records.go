package sqlitestore

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The statements on dedup_records. The writer and the read pool share
// selectRecord so that both decode rows the same way, through scanRecord.
const (
	selectRecord = `SELECT ` + recordFields + `
FROM dedup_records WHERE consumer = $1 AND key = $2`

	// deleteExpired: the table is WITHOUT ROWID, so the batch is picked by
	// primary key (SQLite walks the expires_at index for the subquery, then
	// deletes by key). The outer expires_at test repeats the subquery's, so
	// that the statement says on its face that it never deletes a live row.
	deleteExpired = `DELETE FROM dedup_records
WHERE expires_at <= $1 AND (consumer, key) IN (
    SELECT consumer, key FROM dedup_records WHERE expires_at <= $1 LIMIT $2)`
)

// scanRecord decodes a row of selectRecord. It returns nil, nil when there
// is no row.
func scanRecord(row *sql.Row, consumer, key string) (*store.Record, error) {
	r := &store.Record{Consumer: consumer, Key: key}
	err := scanFields(row, r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// recordFields are the columns scanFields decodes, those of selectRecord.
const recordFields = `state, digest, fencing_token, attempts, owner, result,
       rejection_reason, rejection_message, rejection_detail, rejection_retryable,
       created_at, updated_at, lease_expires_at, expires_at`

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// scanFields decodes the destinations in lead followed by recordFields into r.
func scanFields(row rowScanner, r *store.Record, lead ...any) error {
	var (
		state                         string
		rejectionReason, rejectionMsg sql.NullString
		rejectionDetail               []byte
		rejectionRetryable            sql.NullBool
		created, updated              int64
		leaseExpires, expires         int64
	)
	err := row.Scan(append(lead, &state, &r.Digest, &r.FencingToken, &r.Attempts, &r.Owner, &r.Result,
		&rejectionReason, &rejectionMsg, &rejectionDetail, &rejectionRetryable,
		&created, &updated, &leaseExpires, &expires)...)
	if err != nil {
		return err
	}
	r.State = store.State(state)
	// rejection_retryable is written for every rejection, so it alone says
	// whether there is one; reason and message may legitimately be empty.
	if rejectionRetryable.Valid {
		r.Rejection = &store.Rejection{
			Reason:    rejectionReason.String,
			Message:   rejectionMsg.String,
			Detail:    rejectionDetail,
			Retryable: rejectionRetryable.Bool,
		}
	}
	r.CreatedAt = fromMicros(created)
	r.UpdatedAt = fromMicros(updated)
	r.LeaseExpiresAt = fromMicros(leaseExpires)
	r.ExpiresAt = fromMicros(expires)
	return nil
}

// recordColumns names the columns of recordArgs, in its order: the one
// list of them that the statements writing a row are built from.
var recordColumns = [...]string{"consumer", "key", "state", "digest", "fencing_token", "attempts", "owner", "result",
	"rejection_reason", "rejection_message", "rejection_detail", "rejection_retryable",
	"created_at", "updated_at", "lease_expires_at", "expires_at"}

// The writes of a whole row, their columns named once, in recordColumns.
var (
	// insertRecord inserts a row of recordArgs.
	insertRecord = `INSERT INTO dedup_records (` + strings.Join(recordColumns[:], ", ") + `)
VALUES (` + parameters(1, len(recordColumns)) + `)`

	// insertFreshRecord inserts the record of a claim of a key that has no
	// row, and nothing when it has one (see decide.go).
	insertFreshRecord = insertRecord + `
ON CONFLICT (consumer, key) DO NOTHING`

	// upsertRecord writes a decided record whether or not a row exists: an
	// expired row is overwritten by a fresh claim, and one statement keeps
	// the transaction short.
	upsertRecord = insertRecord + `
ON CONFLICT (consumer, key) DO UPDATE SET ` + setExcluded(recordColumns[2:])
)

// parameters is "$first, ..., $(first+n-1)".
func parameters(first, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = "$" + strconv.Itoa(first+i)
	}
	return strings.Join(ps, ", ")
}

// setExcluded is the SET list that gives each of columns the value the
// insert proposed.
func setExcluded(columns []string) string {
	set := make([]string, len(columns))
	for i, c := range columns {
		set[i] = c + " = excluded." + c
	}
	return strings.Join(set, ", ")
}

// recordArgs are the arguments of insertRecord and upsertRecord for r.
func recordArgs(r *store.Record) []any {
	digest := r.Digest
	if digest == nil {
		// The driver binds a nil slice as NULL, which digest refuses; an
		// absent digest is an empty one.
		digest = []byte{}
	}
	var reason, message, detail, retryable any
	if j := r.Rejection; j != nil {
		reason, message, detail, retryable = j.Reason, j.Message, j.Detail, j.Retryable
	}
	return []any{
		r.Consumer, r.Key, string(r.State), digest, r.FencingToken, r.Attempts, r.Owner, r.Result,
		reason, message, detail, retryable,
		r.CreatedAt.UnixMicro(), r.UpdatedAt.UnixMicro(), r.LeaseExpiresAt.UnixMicro(), r.ExpiresAt.UnixMicro(),
	}
}

// fromMicros reads a stored time back exactly as store.Now produced it.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
