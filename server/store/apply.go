package store

import (
	"bytes"
	"fmt"
	"time"
)

// Command is a write to one key: a ClaimParams, CompleteParams, RejectParams,
// ExtendLeaseParams or DeleteRecordParams. Op names it for metrics, traces
// and retries, so a new command cannot be added without a name; Target is
// the consumer and key it writes.
type Command interface {
	isCommand()
	Op() Op
	Target() (consumer, key string)
}

func (p ClaimParams) Target() (consumer, key string)        { return p.Consumer, p.Key }
func (p CompleteParams) Target() (consumer, key string)     { return p.Consumer, p.Key }
func (p RejectParams) Target() (consumer, key string)       { return p.Consumer, p.Key }
func (p ExtendLeaseParams) Target() (consumer, key string)  { return p.Consumer, p.Key }
func (p DeleteRecordParams) Target() (consumer, key string) { return p.Consumer, p.Key }

func (ClaimParams) isCommand()        {}
func (CompleteParams) isCommand()     {}
func (RejectParams) isCommand()       {}
func (ExtendLeaseParams) isCommand()  {}
func (DeleteRecordParams) isCommand() {}

func (ClaimParams) Op() Op        { return OpClaim }
func (CompleteParams) Op() Op     { return OpComplete }
func (RejectParams) Op() Op       { return OpReject }
func (ExtendLeaseParams) Op() Op  { return OpExtendLease }
func (DeleteRecordParams) Op() Op { return OpDeleteRecord }

// DeleteRecordParams are the inputs of Admin.DeleteRecord.
type DeleteRecordParams struct {
	Consumer, Key string
}

// Decision is what Apply decides.
type Decision struct {
	// Record is the key's record after the command.
	Record Record
	// Write says whether Record must be stored; false when the command
	// changes nothing (an in-progress or replayed claim, a repeated Complete).
	Write bool
	// Outcome and RetryAfter are set for claims.
	Outcome    Outcome
	RetryAfter time.Duration
}

// Apply is the record state machine, the one place its rules live. Given the
// stored record (nil when the key has none), a command and the store's
// current time, it returns the next record or the error to report. Every
// time it sets is cut to microseconds, so what a store returns equals what
// it reads back.
//
// An expired record counts as absent, except that its fencing token keeps
// counting so that a holder of an old lease cannot pass for a new one. Once
// the reaper has deleted the row, tokens start again at 1: a holder that
// stalls for longer than its lease plus the released TTL could then collide
// with a new holder, which is why that TTL is measured in hours.
//
// Apply is pure: every backend calls it inside its own atomic step.
func Apply(stored *Record, cmd Command, now time.Time) (Decision, error) {
	now = Now(now)
	if stored != nil && !now.Before(stored.ExpiresAt) {
		if c, ok := cmd.(ClaimParams); ok {
			return acquireFresh(c, now, stored.FencingToken+1), nil
		}
		stored = nil
	}
	switch c := cmd.(type) {
	case ClaimParams:
		return applyClaim(stored, c, now)
	case CompleteParams:
		return applyComplete(stored, c, now)
	case RejectParams:
		return applyReject(stored, c, now)
	case ExtendLeaseParams:
		return applyExtendLease(stored, c, now)
	case DeleteRecordParams:
		return Tombstone(stored, now)
	}
	return Decision{}, fmt.Errorf("store: unknown command %T", cmd)
}

// Now normalises a clock reading to what every backend can store: UTC with
// microsecond precision.
func Now(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// IsLive reports whether a stored record still counts at time now.
func IsLive(r *Record, now time.Time) bool {
	return r != nil && Now(now).Before(r.ExpiresAt)
}

func applyClaim(stored *Record, c ClaimParams, now time.Time) (Decision, error) {
	if stored == nil {
		return acquireFresh(c, now, 1), nil
	}
	if !bytes.Equal(stored.Digest, c.Digest) {
		return Decision{}, conflict(ErrDigestMismatch, stored)
	}
	switch stored.State {
	case Completed:
		return Decision{Record: *stored, Outcome: AlreadyCompleted}, nil
	case Rejected:
		return Decision{Record: *stored, Outcome: AlreadyRejected}, nil
	case Pending:
		if now.Before(stored.LeaseExpiresAt) {
			return Decision{Record: *stored, Outcome: InProgress, RetryAfter: stored.LeaseExpiresAt.Sub(now)}, nil
		}
	}
	// A released key, or a pending one whose lease ran out: take it over.
	next := *stored
	next.State = Pending
	next.FencingToken++
	next.Attempts++
	next.Owner = c.Owner
	next.Result = nil
	next.Rejection = nil
	next.UpdatedAt = now
	setLease(&next, leaseTTL(c.LeaseTTL, c.Policy), c.Policy, now)
	return Decision{Record: next, Write: true, Outcome: Acquired}, nil
}

func acquireFresh(c ClaimParams, now time.Time, token int64) Decision {
	next := Record{
		Consumer:     c.Consumer,
		Key:          c.Key,
		State:        Pending,
		Digest:       c.Digest,
		FencingToken: token,
		Attempts:     1,
		Owner:        c.Owner,
		CreatedAt:    now,
		UpdatedAt:    now,
	}
	setLease(&next, leaseTTL(c.LeaseTTL, c.Policy), c.Policy, now)
	return Decision{Record: next, Write: true, Outcome: Acquired}
}

// setLease starts a lease at now. A pending record outlives its lease by the
// released TTL, so that an abandoned claim stays visible for reconciliation
// for as long as a released one would.
func setLease(r *Record, ttl time.Duration, p Policy, now time.Time) {
	r.LeaseExpiresAt = Now(now.Add(ttl))
	r.ExpiresAt = Now(r.LeaseExpiresAt.Add(p.ReleasedTTL))
}

func leaseTTL(requested time.Duration, p Policy) time.Duration {
	if requested > 0 {
		return requested
	}
	return p.DefaultLeaseTTL
}

// checkHolder refuses a write by anyone but the holder of the key's current
// fencing token.
func checkHolder(stored *Record, token int64) error {
	if stored == nil {
		return ErrLeaseLost
	}
	if stored.FencingToken != token {
		return conflict(ErrLeaseLost, stored)
	}
	return nil
}

func applyComplete(stored *Record, c CompleteParams, now time.Time) (Decision, error) {
	if err := checkHolder(stored, c.FencingToken); err != nil {
		return Decision{}, err
	}
	switch stored.State {
	case Pending:
		next := *stored
		next.State = Completed
		next.Result = c.Result
		next.UpdatedAt = now
		next.ExpiresAt = Now(now.Add(c.Policy.CompletedTTL))
		return Decision{Record: next, Write: true}, nil
	case Completed:
		if bytes.Equal(stored.Result, c.Result) {
			return Decision{Record: *stored}, nil
		}
		return Decision{}, conflict(ErrAlreadyFinished, stored)
	case Rejected:
		return Decision{}, conflict(ErrAlreadyFinished, stored)
	}
	return Decision{}, conflict(ErrLeaseLost, stored)
}

func applyReject(stored *Record, c RejectParams, now time.Time) (Decision, error) {
	if err := checkHolder(stored, c.FencingToken); err != nil {
		return Decision{}, err
	}
	repeated := stored.Rejection != nil && sameRejection(*stored.Rejection, c.Rejection)
	switch stored.State {
	case Pending:
		next := *stored
		rejection := c.Rejection
		next.Rejection = &rejection
		next.UpdatedAt = now
		if rejection.Retryable {
			next.State = Released
			next.ExpiresAt = Now(now.Add(c.Policy.ReleasedTTL))
		} else {
			next.State = Rejected
			next.ExpiresAt = Now(now.Add(c.Policy.RejectedTTL))
		}
		return Decision{Record: next, Write: true}, nil
	case Rejected, Released:
		if repeated {
			return Decision{Record: *stored}, nil
		}
		if stored.State == Released {
			return Decision{}, conflict(ErrLeaseLost, stored)
		}
	}
	return Decision{}, conflict(ErrAlreadyFinished, stored)
}

func sameRejection(a, b Rejection) bool {
	return a.Reason == b.Reason && a.Message == b.Message &&
		bytes.Equal(a.Detail, b.Detail) && a.Retryable == b.Retryable
}

func applyExtendLease(stored *Record, c ExtendLeaseParams, now time.Time) (Decision, error) {
	if err := checkHolder(stored, c.FencingToken); err != nil {
		return Decision{}, err
	}
	switch stored.State {
	case Pending:
		next := *stored
		next.UpdatedAt = now
		setLease(&next, leaseTTL(c.LeaseTTL, c.Policy), c.Policy, now)
		return Decision{Record: next, Write: true}, nil
	case Released:
		return Decision{}, conflict(ErrLeaseLost, stored)
	}
	return Decision{}, conflict(ErrAlreadyFinished, stored)
}

// Tombstone is DeleteRecord's rule: a live record is made to expire at now
// (its row stays until reaped, so that the key's fencing tokens keep
// counting; see Admin.DeleteRecord), and a key with no live record is
// ErrNotFound. now is a normalised clock reading (see Now).
func Tombstone(stored *Record, now time.Time) (Decision, error) {
	if !IsLive(stored, now) {
		return Decision{}, ErrNotFound
	}
	next := *stored
	next.ExpiresAt = now
	return Decision{Record: next, Write: true}, nil
}
