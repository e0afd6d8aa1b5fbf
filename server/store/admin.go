package store

import (
	"context"
	"errors"
	"time"
)

// ConsumerPolicy is the stored policy of one consumer. A zero field takes
// the server default (see Resolve).
type ConsumerPolicy struct {
	Consumer        string
	CompletedTTL    time.Duration
	RejectedTTL     time.Duration
	ReleasedTTL     time.Duration
	DefaultLeaseTTL time.Duration
	MaxLeaseTTL     time.Duration
	MaxResultBytes  int64
	// RequireDigest refuses claims with an empty digest.
	RequireDigest bool
	// UpdatedAt is set by the store when the policy is written.
	UpdatedAt time.Time
}

// ListParams are the inputs of Store.ListRecords. Zero values mean "no
// filter".
type ListParams struct {
	Consumer  string
	States    []State
	KeyPrefix string
	// CreatedAfter and UpdatedAfter are inclusive, the Before bounds
	// exclusive.
	CreatedAfter  time.Time
	CreatedBefore time.Time
	UpdatedAfter  time.Time
	UpdatedBefore time.Time
	// LeaseExpired keeps only Pending records whose lease has run out.
	LeaseExpired bool
	// AfterKey continues a listing: only keys strictly greater are returned.
	AfterKey string
	// Limit is the most records returned; it must be positive.
	Limit int
}

// PurgeParams select the records of Store.PurgeBatch and Store.CountPurge.
type PurgeParams struct {
	// Consumer may be empty only with ExpiredOnly.
	Consumer string
	States   []State
	// UpdatedBefore, when set, keeps only records last changed before it.
	UpdatedBefore time.Time
	// ExpiredOnly keeps only records past their ExpiresAt.
	ExpiredOnly bool
	// Limit is the batch size of PurgeBatch; CountPurge ignores it.
	Limit int
	// CountOnly makes the engine's Purge count every matching record
	// (CountPurge) instead of deleting a batch of them (PurgeBatch). The
	// typed API sets it; callers of PurgeBatch and CountPurge need not.
	CountOnly bool
}

// ConsumerStats counts one consumer's stored records. The state counts are
// of live records; records past their expiry are counted in Expired only.
type ConsumerStats struct {
	Consumer            string
	Pending             int64
	Completed           int64
	Rejected            int64
	Released            int64
	PendingLeaseExpired int64
	// OldestPendingAt is the least recent UpdatedAt of the live Pending
	// records: the last claim or lease extension of the claim left alone
	// longest; zero when there is none.
	OldestPendingAt time.Time
	Expired         int64
}

// LeaseStats sums up one consumer's claims in flight: how many there are,
// how many of their leases have run out (the reconciliation queue), and how
// long the one left alone longest has been (a claim is renewed by each
// lease extension, so a heartbeating holder stays recent and an abandoned
// claim ages).
type LeaseStats struct {
	Consumer string
	Held     int64
	Expired  int64
	// OldestUpdatedAt is the least recent UpdatedAt of the claims in
	// flight; zero when Held is 0.
	OldestUpdatedAt time.Time
}

// Admin is what operators need beyond the hot path: reading many records,
// deleting them, counting them, and per-consumer policies.
type Admin interface {
	// ListRecords returns at most p.Limit live records of p.Consumer that
	// match the filters, in ascending key order, with keys greater than
	// p.AfterKey. The order is bytewise on SQLite and CockroachDB, and the
	// database's collation on PostgreSQL (bytewise under C or C.UTF-8);
	// paging is correct under any, as comparison and order agree. Expired
	// records are never returned, judged on the store's clock. Paging with
	// AfterKey set to the last key returned visits every record that stays
	// live throughout exactly once, whatever is inserted or deleted
	// meanwhile, and never returns a key twice.
	ListRecords(ctx context.Context, p ListParams) ([]Record, error)

	// DeleteRecord forgets one key's live record, whatever its state, and
	// returns it with ExpiresAt set to the moment it was forgotten. From
	// then on the key counts as absent everywhere: Lookup and ListRecords
	// do not see it, and the next Claim acquires it afresh, so the work can
	// run again. It must return ErrNotFound, changing nothing, when the key
	// has no live record.
	//
	// The record is made to expire now rather than deleted: its row stays
	// until the reaper or a purge of expired records removes it, so that
	// the next claim's fencing token continues from the deleted record's
	// (see Apply) and a holder of the deleted lease cannot pass for the new
	// holder. In Stats it counts as Expired until then.
	DeleteRecord(ctx context.Context, consumer, key string) (Record, error)

	// PurgeBatch deletes at most p.Limit matching records in one atomic step
	// and returns how many it deleted; 0 means none match any more. Unlike
	// DeleteRecord it removes rows, live or not: purging a consumer's
	// Pending records restarts their keys' fencing tokens, as the reaper
	// does for expired ones.
	PurgeBatch(ctx context.Context, p PurgeParams) (int, error)

	// CountPurge returns how many records PurgeBatch would delete in all.
	CountPurge(ctx context.Context, p PurgeParams) (int64, error)

	// Stats returns the counts of one consumer, or of every consumer with
	// records when consumer is empty, ordered by consumer. A consumer with
	// no records is absent from the result.
	Stats(ctx context.Context, consumer string) ([]ConsumerStats, error)

	// PendingLeases returns the live Pending records of every consumer that
	// has any, summed up per consumer in bytewise consumer order: Held,
	// Expired and OldestUpdatedAt agree with Stats' Pending,
	// PendingLeaseExpired and OldestPendingAt. Unlike Stats it reads only
	// the pending claims (the reconciliation queue's index), never every
	// record, so a server can sample it for its metrics however many
	// records are stored.
	PendingLeases(ctx context.Context) ([]LeaseStats, error)

	// PutPolicy creates or replaces a consumer's policy and returns it as
	// stored, with UpdatedAt set.
	PutPolicy(ctx context.Context, p ConsumerPolicy) (ConsumerPolicy, error)

	// GetPolicy returns a consumer's policy. It must return ErrNoPolicy
	// when the consumer has none.
	GetPolicy(ctx context.Context, consumer string) (ConsumerPolicy, error)

	// ListPolicies returns every stored policy, ordered by consumer.
	ListPolicies(ctx context.Context) ([]ConsumerPolicy, error)

	// DeletePolicy deletes a consumer's policy and returns it. It must
	// return ErrNoPolicy when the consumer has none.
	DeletePolicy(ctx context.Context, consumer string) (ConsumerPolicy, error)
}

// Validate reports parameters that no store accepts. Stores check them and
// return the error, changing nothing; the API validates its requests before
// they get here, so this error means a bug in the caller.
func (p ListParams) Validate() error {
	switch {
	case p.Consumer == "":
		return errors.New("store: ListRecords: consumer is required")
	case p.Limit <= 0:
		return errors.New("store: ListRecords: limit must be positive")
	}
	return nil
}

// Validate reports parameters that no store accepts; a batch (not
// CountOnly) also needs a positive Limit.
func (p PurgeParams) Validate() error {
	switch {
	case p.Consumer == "" && !p.ExpiredOnly:
		return errors.New("store: purge: consumer is required unless only expired records are purged")
	case !p.CountOnly && p.Limit <= 0:
		return errors.New("store: PurgeBatch: limit must be positive")
	}
	return nil
}

// Validate reports policies that no store accepts: no consumer, or a
// negative duration or size.
func (p ConsumerPolicy) Validate() error {
	switch {
	case p.Consumer == "":
		return errors.New("store: policy: consumer is required")
	case p.CompletedTTL < 0, p.RejectedTTL < 0, p.ReleasedTTL < 0, p.DefaultLeaseTTL < 0, p.MaxLeaseTTL < 0:
		return errors.New("store: policy: durations must not be negative")
	case p.MaxResultBytes < 0:
		return errors.New("store: policy: max result bytes must not be negative")
	}
	return nil
}
