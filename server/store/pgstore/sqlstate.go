package pgstore

import (
	"errors"
	"strings"
)

// sqlStateClass sorts a database error by what its SQLSTATE says about the
// statement's fate. Every decision to retry, report or fail an error reads
// this one table.
type sqlStateClass int

const (
	// stateOther: a bug, a schema problem or bad data; reported as internal.
	stateOther sqlStateClass = iota
	// stateRetryable: the transaction was aborted and nothing of it was
	// committed, so running the attempt again is safe: serialization
	// failures (40001, and CockroachDB's old CR000).
	stateRetryable
	// stateUnavailable: the database could not do the work now (connection
	// lost, overloaded, shutting down, a lock or statement timeout, a
	// deadlock victim). Reported as store.ErrUnavailable, not retried here.
	stateUnavailable
	// stateAmbiguous: the database cannot tell whether the commit happened
	// (40003 statement_completion_unknown; CockroachDB returns it, even for
	// an implicit single statement, when a node fails during the commit). The
	// outcome is unknown: reported as store.ErrUnavailable, never retried
	// here, because a blind retry could apply a write twice. The caller's
	// retry reads the stored record and sees what happened.
	stateAmbiguous
)

// classifySQLState returns the class of a SQLSTATE ("" for errors without
// one).
func classifySQLState(code string) sqlStateClass {
	switch code {
	case "40001", "CR000": // serialization_failure, CockroachDB's retry error
		return stateRetryable
	case "40003": // statement_completion_unknown
		return stateAmbiguous
	case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
		"40P01", "55P03", "57014": // deadlock_detected, lock_not_available, query_canceled
		return stateUnavailable
	}
	// Connection exceptions (08), insufficient resources (53), system
	// errors (58).
	for _, prefix := range []string{"08", "53", "58"} {
		if strings.HasPrefix(code, prefix) {
			return stateUnavailable
		}
	}
	return stateOther
}

// sqlState returns the SQLSTATE that err carries, or "".
func sqlState(err error) string {
	var withState interface{ SQLState() string }
	if errors.As(err, &withState) {
		return withState.SQLState()
	}
	return ""
}

// isRetryable reports a serialization failure: the attempt may run again.
// crdb.ExecuteCtx applies the same rule to the store's statements; the
// migration runner, which does not run through it, asks here.
func isRetryable(err error) bool {
	return classifySQLState(sqlState(err)) == stateRetryable
}

// wroteNothing reports whether err is the database's refusal of a single
// statement, which then changed nothing (a lock or statement timeout, a
// serialization failure); not a broken connection or a server going down
// mid-statement (classes 08 and 57P), and not an ambiguous commit.
func wroteNothing(err error) bool {
	code := sqlState(err)
	return code != "" && classifySQLState(code) != stateAmbiguous &&
		!strings.HasPrefix(code, "08") && !strings.HasPrefix(code, "57P")
}
