// Package sqlstmt holds the SQL that the PostgreSQL and SQLite stores share:
// the admin filters (listing, purging), the counts (Stats, StreamStats,
// the lease sums), the policy statements and the ready-parked query. Each
// is written once and built for a Dialect, which says the one thing the
// two stores write differently: the clock. PostgreSQL reads its own
// (statement_timestamp()); SQLite has none that keeps microseconds, so the
// store reads the process clock and binds it as $1. Everything the
// statements select, PostgreSQL and CockroachDB run alike (see
// docs/cockroachdb.md).
package sqlstmt

import (
	"strconv"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// Dialect is how a store writes and binds its clock.
type Dialect struct {
	// Now is the clock in a statement: a function of the database, or $1
	// when the store reads the clock and binds it first.
	Now string
	// Time converts a time to the bound value of a time column.
	Time func(time.Time) any
	// clock reads the time bound as $1; nil when the database reads its
	// own.
	clock func() time.Time
}

var (
	// Postgres is the dialect of PostgreSQL and CockroachDB: the time of
	// the statement, the same at each mention, as the clock, and times
	// bound as TIMESTAMPTZ.
	Postgres = Dialect{Now: "statement_timestamp()", Time: func(t time.Time) any { return t }}
	// SQLite is the dialect of SQLite: the process clock, read once per
	// statement, and times bound as Unix microseconds.
	SQLite = Dialect{Now: "$1", Time: micros, clock: time.Now}
)

func micros(t time.Time) any { return store.Now(t).UnixMicro() }

// At is d with its clock stopped at t and bound as $1, so that a test can
// put rows exactly on the boundaries the statements compare them with.
func (d Dialect) At(t time.Time) Dialect {
	return Dialect{Now: "$1", Time: d.Time, clock: func() time.Time { return t }}
}

// Arg is the placeholder of a clock-reading statement's n-th argument of
// its own (from 1), after the clock's.
func (d Dialect) Arg(n int) string {
	if d.clock != nil {
		n++
	}
	return "$" + strconv.Itoa(n)
}

// Args are the bound values of a statement that reads the clock: the
// clock's, then args. A statement that does not mention Now takes its args
// as they are.
func (d Dialect) Args(args ...any) []any {
	if d.clock == nil {
		return args
	}
	return append([]any{d.Time(d.clock())}, args...)
}

// args is "Arg(first), ..., Arg(first+n-1)".
func (d Dialect) args(first, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = d.Arg(first + i)
	}
	return strings.Join(ps, ", ")
}
