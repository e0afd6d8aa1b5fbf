// Package store defines what dedupd remembers about each key and the contract
// every storage backend fulfils.
//
// The rules of the record state machine live in one pure function, Apply;
// backends only load a record, call Apply, and write what it returns, inside
// whatever atomic step their database offers. The conformance suite in
// package storetest holds every backend to the contract written here.
package store

import (
	"context"
	"time"
)

// State is the lifecycle state of a stored record.
type State string

const (
	// Pending: claimed; the holder of the current fencing token does the work.
	Pending State = "PENDING"
	// Completed: terminal; the result is stored and replayed.
	Completed State = "COMPLETED"
	// Rejected: terminal; the rejection is stored and replayed.
	Rejected State = "REJECTED"
	// Released: given up for a retry; the next claim acquires it.
	Released State = "RELEASED"
)

// Outcome says what a Claim found.
type Outcome int

const (
	// Acquired: the caller holds a new lease and must do the work.
	Acquired Outcome = iota + 1
	// InProgress: another caller holds a live lease.
	InProgress
	// AlreadyCompleted: the stored result is returned.
	AlreadyCompleted
	// AlreadyRejected: the stored rejection is returned.
	AlreadyRejected
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "ACQUIRED"
	case InProgress:
		return "IN_PROGRESS"
	case AlreadyCompleted:
		return "COMPLETED"
	case AlreadyRejected:
		return "REJECTED"
	}
	return "UNKNOWN"
}

// Rejection is a refusal stored by Reject.
type Rejection struct {
	Reason    string
	Message   string
	Detail    []byte
	Retryable bool
}

// Record is one key's stored state. Times are UTC with microsecond precision,
// the precision every backend keeps.
type Record struct {
	Consumer     string
	Key          string
	State        State
	Digest       []byte
	FencingToken int64
	Attempts     int64
	Owner        string
	Result       []byte
	// Rejection is set by Reject: in Rejected, and in Released when the
	// release came from a retryable rejection.
	Rejection      *Rejection
	CreatedAt      time.Time
	UpdatedAt      time.Time
	LeaseExpiresAt time.Time
	// ExpiresAt is when the record is forgotten: from then on it is treated
	// as absent, whether or not the reaper has deleted it yet.
	ExpiresAt time.Time
}

// Policy holds the retention and lease rules in force for one call.
type Policy struct {
	// DefaultLeaseTTL applies when a claim or extension names no lease.
	DefaultLeaseTTL time.Duration
	// CompletedTTL and RejectedTTL: how long terminal outcomes are kept.
	CompletedTTL time.Duration
	RejectedTTL  time.Duration
	// ReleasedTTL: how long a released claim, or a pending claim whose lease
	// ran out (an abandoned one, awaiting reconciliation), is kept.
	ReleasedTTL time.Duration
}

// ClaimParams are the inputs of Store.Claim.
type ClaimParams struct {
	Consumer string
	Key      string
	Digest   []byte
	// LeaseTTL of zero means Policy.DefaultLeaseTTL.
	LeaseTTL time.Duration
	Owner    string
	Policy   Policy
}

// CompleteParams are the inputs of Store.Complete.
type CompleteParams struct {
	Consumer     string
	Key          string
	FencingToken int64
	Result       []byte
	Policy       Policy
}

// RejectParams are the inputs of Store.Reject.
type RejectParams struct {
	Consumer     string
	Key          string
	FencingToken int64
	Rejection    Rejection
	Policy       Policy
}

// ExtendLeaseParams are the inputs of Store.ExtendLease.
type ExtendLeaseParams struct {
	Consumer     string
	Key          string
	FencingToken int64
	// LeaseTTL of zero means Policy.DefaultLeaseTTL.
	LeaseTTL time.Duration
	Policy   Policy
}

// ClaimResult is what Store.Claim returns.
type ClaimResult struct {
	Outcome Outcome
	// Record is the stored record after the claim.
	Record Record
	// RetryAfter is set for InProgress: the time left on the current lease,
	// measured on the store's clock.
	RetryAfter time.Duration
}

// Store is the durable home of dedup records: the key half of Backend,
// which every backend implements whole. Every method is safe for
// concurrent use, including from several server processes sharing one
// database, and is atomic: it either applies its whole effect or none.
//
// Decisions about leases and expiry are taken on the store's clock (the
// database's own for a shared database), so server replicas with skewed
// clocks cannot steal a live lease from each other.
//
// Errors: the sentinel errors of this package (wrapped, with the stored
// record where there is one; see ConflictError), ErrUnavailable when the
// database cannot be reached or stays contended, or the context's error.
// A refusal changes nothing. ErrUnavailable and the context's error mean the
// outcome is unknown once the write has been sent: the connection may fail
// during COMMIT, and a call that gives up while its statement waits in the
// database (on a row lock, say) may still have it applied there after the
// caller was told it gave up. Before the write is sent they change nothing.
// Every write is safe to repeat, so callers retry and see the stored
// outcome.
type Store interface {
	Admin
	Batcher

	// Claim applies a claim to the key (see Apply). It must return exactly
	// one Acquired among any number of concurrent claims of a free key, and
	// ErrDigestMismatch, changing nothing, when the stored digest differs.
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)

	// Complete stores a result under the current fencing token. It must
	// return ErrLeaseLost when the token is not the key's current one or the
	// key is absent, and ErrAlreadyFinished when the key already holds a
	// different terminal outcome.
	Complete(ctx context.Context, p CompleteParams) (Record, error)

	// Reject stores a terminal rejection, or releases the key when the
	// rejection is retryable. Errors as for Complete.
	Reject(ctx context.Context, p RejectParams) (Record, error)

	// ExtendLease renews the lease of a pending claim from now. Errors as for
	// Complete; ErrAlreadyFinished when the key is terminal.
	ExtendLease(ctx context.Context, p ExtendLeaseParams) (Record, error)

	// Lookup returns the record of a key. It must return ErrNotFound when
	// the key is absent or its record has expired.
	Lookup(ctx context.Context, consumer, key string) (Record, error)

	// DeleteExpired deletes at most limit records whose ExpiresAt has passed
	// and returns how many it deleted; it never deletes a live record.
	DeleteExpired(ctx context.Context, limit int) (int, error)

	// Ping reports whether the database answers; ErrUnavailable when not.
	Ping(ctx context.Context) error

	// Close releases the store's resources.
	Close() error
}
