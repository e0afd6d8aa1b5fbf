package sqlstmt

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dedupd/dedupd/server/store"
)

// The admin calls' WHERE clauses, so that the filters of store.ListParams
// and store.PurgeParams mean on PostgreSQL and SQLite what
// ListParams.Matches and PurgeParams.Matches say.

// Query accumulates AND-ed conditions and their arguments, numbered $1, $2,
// ... in the order they are bound.
type Query struct {
	conds []string
	args  []any
}

// NewQuery starts a query whose first arguments are args (for example the
// clock reading a Dialect's Now refers to as $1).
func NewQuery(args ...any) *Query { return &Query{args: args} }

// Bind adds an argument and returns its placeholder.
func (q *Query) Bind(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// Where adds a condition.
func (q *Query) Where(cond string) { q.conds = append(q.conds, cond) }

// Clause is the WHERE clause, "TRUE" when there are no conditions.
func (q *Query) Clause() string {
	if len(q.conds) == 0 {
		return "TRUE"
	}
	return strings.Join(q.conds, " AND ")
}

// Args are the bound arguments in placeholder order.
func (q *Query) Args() []any { return q.args }

// ListWhere is the condition of ListRecords(p) but its paging's Limit,
// which the caller orders and bounds itself (SelectListed).
func ListWhere(d Dialect, p store.ListParams) *Query {
	q := NewQuery(d.Args()...)
	q.Where("consumer = " + q.Bind(p.Consumer))
	q.Where("expires_at > " + d.Now)
	states(q, p.States)
	if p.KeyPrefix != "" {
		KeyRange(q, p.KeyPrefix)
	}
	timeRange(d, q, "created_at", p.CreatedAfter, p.CreatedBefore)
	timeRange(d, q, "updated_at", p.UpdatedAfter, p.UpdatedBefore)
	if p.LeaseExpired {
		q.Where("state = 'PENDING'")
		q.Where("lease_expires_at <= " + d.Now)
	}
	if p.AfterKey != "" {
		q.Where("key > " + q.Bind(p.AfterKey))
	}
	return q
}

// PurgeWhere is the condition of PurgeBatch(p) and CountPurge(p).
func PurgeWhere(d Dialect, p store.PurgeParams) *Query {
	// The clock is bound only when mentioned: PostgreSQL refuses a
	// parameter it cannot type.
	q := NewQuery()
	if p.ExpiredOnly {
		q = NewQuery(d.Args()...)
		q.Where("expires_at <= " + d.Now)
	}
	if p.Consumer != "" {
		q.Where("consumer = " + q.Bind(p.Consumer))
	}
	states(q, p.States)
	if !p.UpdatedBefore.IsZero() {
		q.Where("updated_at < " + q.Bind(d.Time(p.UpdatedBefore)))
	}
	return q
}

// SelectListed selects columns of the records q (ListWhere) selects, at
// most limit, in key order.
func SelectListed(columns string, q *Query, limit int) string {
	return `SELECT ` + columns + ` FROM dedup_records WHERE ` + q.Clause() + ` ORDER BY key LIMIT ` + strconv.Itoa(limit)
}

// DeletePurged deletes at most limit of the records q (PurgeWhere)
// selects. The subquery picks the batch (neither database runs the other's
// DELETE ... LIMIT); the outer condition is checked again on each row
// deleted, so a row that a concurrent write moved out of the selection
// since survives.
func DeletePurged(q *Query, limit int) string {
	where := q.Clause()
	return `DELETE FROM dedup_records WHERE ` + where + ` AND (consumer, key) IN (
    SELECT consumer, key FROM dedup_records WHERE ` + where + ` LIMIT ` + strconv.Itoa(limit) + `)`
}

// CountPurged counts the records q (PurgeWhere) selects.
func CountPurged(q *Query) string {
	return `SELECT count(*) FROM dedup_records WHERE ` + q.Clause()
}

func states(q *Query, ss []store.State) {
	if len(ss) == 0 {
		return
	}
	ph := make([]string, len(ss))
	for i, s := range ss {
		ph[i] = q.Bind(string(s))
	}
	q.Where("state IN (" + strings.Join(ph, ", ") + ")")
}

func timeRange(d Dialect, q *Query, column string, after, before time.Time) {
	if !after.IsZero() {
		q.Where(column + " >= " + q.Bind(d.Time(after)))
	}
	if !before.IsZero() {
		q.Where(column + " < " + q.Bind(d.Time(before)))
	}
}

// KeyRange adds "key starts with prefix" as the range prefix <= key <
// PrefixEnd(prefix). Keys compare bytewise on every store (SQLite's BINARY
// collation; on PostgreSQL the key column is COLLATE "C", migration 2001),
// so the range holds exactly the keys with the prefix, whatever bytes the
// prefix holds. LIKE would need escaping and is case-insensitive for ASCII
// in SQLite; and unlike LIKE $n, which PostgreSQL can turn into an index
// range only when it plans with the value in hand, a range of bound
// parameters uses the primary key on a generic plan too.
func KeyRange(q *Query, prefix string) {
	q.Where("key >= " + q.Bind(prefix))
	if end, ok := PrefixEnd(prefix); ok {
		q.Where("key < " + q.Bind(end))
	}
}

// PrefixEnd returns the smallest valid UTF-8 string greater, bytewise, than
// every string that starts with prefix, and false when there is none
// (prefix is empty or only U+10FFFF). A key starts with prefix exactly when
// prefix <= key < PrefixEnd(prefix). It steps the last code point rather
// than the last byte, because PostgreSQL refuses a TEXT parameter that is
// not UTF-8; for valid UTF-8, code point order is byte order. prefix must
// be valid UTF-8, as the API requires of every key.
func PrefixEnd(prefix string) (string, bool) {
	for p := prefix; p != ""; {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		switch r {
		case utf8.MaxRune:
			continue // no code point above it: step the one before
		case 0xD7FF:
			return p + "", true // skip the surrogates, which UTF-8 cannot hold
		default:
			return p + string(r+1), true
		}
	}
	return "", false
}
