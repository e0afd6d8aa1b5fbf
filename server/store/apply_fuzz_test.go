package store

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// FuzzApply runs random scripts of commands against one key, with a clock
// that moves forward by random steps (including past every lease and TTL)
// and a reaper that deletes the record once it has expired, and checks the
// invariants of the record state machine after every step. Each script
// byte picks an operation and the next byte its arguments, so every byte
// string is a valid script.
//
// Run it longer than CI does with
//
//	go test -run '^$' -fuzz FuzzApply -fuzztime 5m ./server/store/
//
// Seeds live in testdata/fuzz/FuzzApply and in the f.Add calls below.
func FuzzApply(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 1, 0})                   // claim, complete
	f.Add([]byte{0, 0, 2, 8, 0, 0})             // claim, retryable reject, claim again
	f.Add([]byte{0, 0, 4, 5, 0, 1, 1, 0})       // claim, lease runs out, other digest, complete
	f.Add([]byte{0, 0, 1, 0, 4, 6, 5, 0, 0, 0}) // complete, expire, reap, claim from token 1
	// claim, extend with a stale token, take over after the lease, complete
	// with the old token
	f.Add([]byte{0, 1, 3, 1, 4, 5, 0, 1, 3, 0, 1, 1})
	f.Fuzz(func(t *testing.T, script []byte) {
		k := &keyUnderFuzz{t: t, now: fuzzEpoch}
		for i := 0; i+1 < len(script); i += 2 {
			k.step(script[i], script[i+1])
		}
	})
}

var (
	fuzzEpoch  = time.Date(2031, 1, 2, 3, 4, 5, 678_901_234, time.UTC)
	fuzzPolicy = Policy{
		DefaultLeaseTTL: 30 * time.Second,
		CompletedTTL:    24 * time.Hour,
		RejectedTTL:     12 * time.Hour,
		ReleasedTTL:     time.Hour,
	}
	fuzzDigests = [][]byte{[]byte("digest-A"), []byte("digest-B"), nil}
	fuzzResults = [][]byte{[]byte("result-1"), []byte("result-2"), nil}
	fuzzLeases  = []time.Duration{0, time.Nanosecond, 10 * time.Second, 90 * time.Minute}
	// fuzzSteps are the clock moves: none, below the stored precision,
	// one microsecond, one second, a lease, past the released TTL, past
	// every TTL, and a day and a half.
	fuzzSteps      = []time.Duration{0, 999, time.Microsecond, time.Second, 10 * time.Second, 61 * time.Minute, 25 * time.Hour, 36 * time.Hour}
	fuzzRejections = []Rejection{
		{Reason: "OUT_OF_STOCK", Message: "none left", Detail: []byte{0, 1}},
		{Reason: "FRAUD", Message: "refused"},
		{Reason: "BUSY", Message: "try later", Detail: []byte{9}, Retryable: true},
	}
)

// keyUnderFuzz is one key as a store keeps it: the stored record (nil when
// there is none) and the store's clock.
type keyUnderFuzz struct {
	t      *testing.T
	now    time.Time
	stored *Record
	log    []string // what the script did so far, for failure messages
}

func (k *keyUnderFuzz) step(op, arg byte) {
	switch op % 6 {
	case 0:
		k.apply(ClaimParams{Consumer: "c", Key: "k", Digest: pick(fuzzDigests, arg),
			LeaseTTL: pick(fuzzLeases, arg>>2), Owner: string(rune('a' + arg%26)), Policy: fuzzPolicy})
	case 1:
		k.apply(CompleteParams{Consumer: "c", Key: "k", FencingToken: k.token(arg),
			Result: pick(fuzzResults, arg>>2), Policy: fuzzPolicy})
	case 2:
		k.apply(RejectParams{Consumer: "c", Key: "k", FencingToken: k.token(arg),
			Rejection: pick(fuzzRejections, arg>>2), Policy: fuzzPolicy})
	case 3:
		k.apply(ExtendLeaseParams{Consumer: "c", Key: "k", FencingToken: k.token(arg),
			LeaseTTL: pick(fuzzLeases, arg>>2), Policy: fuzzPolicy})
	case 4:
		k.now = k.now.Add(pick(fuzzSteps, arg))
		k.log = append(k.log, "clock -> "+k.now.Format(time.RFC3339Nano))
	case 5:
		// The reaper deletes only what has expired (Store.DeleteExpired).
		if k.stored != nil && !IsLive(k.stored, k.now) {
			k.stored = nil
			k.log = append(k.log, "reaped")
		}
	}
}

func pick[T any](choices []T, b byte) T { return choices[int(b)%len(choices)] }

// token picks the fencing token a caller presents: the current one, a
// stale one, one from the future, or 1.
func (k *keyUnderFuzz) token(arg byte) int64 {
	current := int64(0)
	if k.stored != nil {
		current = k.stored.FencingToken
	}
	switch arg % 4 {
	case 0:
		return current
	case 1:
		return current - 1
	case 2:
		return current + 1
	}
	return 1
}

// apply runs cmd through Apply like a store does (write only when told to)
// and checks the result against the stored record before it.
func (k *keyUnderFuzz) apply(cmd Command) {
	k.log = append(k.log, describeCommand(cmd))
	before := cloneRecord(k.stored)
	d, err := Apply(k.stored, cmd, k.now)
	if !reflect.DeepEqual(k.stored, before) {
		k.fail("Apply changed the stored record it was given: %+v, was %+v", k.stored, before)
	}
	var live *Record
	if IsLive(before, k.now) {
		live = before
	}
	k.checkHeldFinish(cmd, before, d, err)
	if err != nil {
		k.checkRefusal(cmd, live, err)
		return // a refusal changes nothing
	}
	k.checkDecision(cmd, before, live, d)
	if d.Write {
		next := d.Record
		k.stored = &next
	}
}

// checkRefusal: only the documented errors, each carrying the live record
// it conflicted with, or no record when there is none.
func (k *keyUnderFuzz) checkRefusal(cmd Command, live *Record, err error) {
	allowed := []error{ErrLeaseLost, ErrAlreadyFinished}
	if _, ok := cmd.(ClaimParams); ok {
		allowed = []error{ErrDigestMismatch}
	}
	known := false
	for _, sentinel := range allowed {
		known = known || errors.Is(err, sentinel)
	}
	if !known {
		k.fail("%T returned %v; want one of %v", cmd, err, allowed)
	}
	var conflict *ConflictError
	switch {
	case errors.As(err, &conflict) && live == nil:
		k.fail("%v carries a record %+v, but the key has no live record", err, conflict.Record)
	case errors.As(err, &conflict) && !reflect.DeepEqual(conflict.Record, *live):
		k.fail("%v carries %+v, want the stored %+v", err, conflict.Record, *live)
	case conflict == nil && live != nil:
		k.fail("%v carries no record, but the key has the live record %+v", err, *live)
	}
}

// checkDecision holds every accepted command to the invariants.
func (k *keyUnderFuzz) checkDecision(cmd Command, before, live *Record, d Decision) {
	next := d.Record
	k.checkTimes(next)
	if !d.Write && (live == nil || !reflect.DeepEqual(next, *live)) {
		k.fail("no write, but the decision's record %+v is not the stored %+v", next, live)
	}
	if before != nil && next.FencingToken < before.FencingToken {
		k.fail("fencing token went down from %d to %d", before.FencingToken, next.FencingToken)
	}
	if live != nil && (live.State == Completed || live.State == Rejected) {
		if d.Write || !reflect.DeepEqual(next, *live) {
			k.fail("live terminal record %+v changed to %+v", *live, next)
		}
	}
	if live != nil && d.Outcome != Acquired && !bytes.Equal(next.Digest, live.Digest) {
		k.fail("digest changed from %q to %q without a new acquisition", live.Digest, next.Digest)
	}
	switch c := cmd.(type) {
	case ClaimParams:
		k.checkClaim(c, before, live, d)
	case CompleteParams:
		if next.State != Completed || !bytes.Equal(next.Result, c.Result) || next.FencingToken != c.FencingToken {
			k.fail("Complete %+v accepted, but the record is %+v", c, next)
		}
	case RejectParams:
		want := Rejected
		if c.Rejection.Retryable {
			want = Released
		}
		if next.State != want || next.Rejection == nil || !sameRejection(*next.Rejection, c.Rejection) || next.FencingToken != c.FencingToken {
			k.fail("Reject %+v accepted, but the record is %+v", c, next)
		}
	case ExtendLeaseParams:
		if next.State != Pending || next.FencingToken != c.FencingToken || next.LeaseExpiresAt.Before(Now(k.now)) {
			k.fail("ExtendLease %+v accepted, but the record is %+v", c, next)
		}
	}
}

func (k *keyUnderFuzz) checkClaim(c ClaimParams, before, live *Record, d Decision) {
	next := d.Record
	if live != nil && !bytes.Equal(c.Digest, live.Digest) {
		k.fail("claim with digest %q accepted on a key bound to %q", c.Digest, live.Digest)
	}
	switch d.Outcome {
	case Acquired:
		want := int64(1)
		if before != nil {
			want = before.FencingToken + 1 // tokens keep counting past expiry
		}
		if !d.Write || next.State != Pending || next.FencingToken != want || next.Owner != c.Owner ||
			!bytes.Equal(next.Digest, c.Digest) || next.Result != nil || next.Rejection != nil {
			k.fail("acquired a record %+v (write %v); want PENDING, token %d, owner %q, no outcome", next, d.Write, want, c.Owner)
		}
		if live != nil && live.State == Pending && Now(k.now).Before(live.LeaseExpiresAt) {
			k.fail("acquired while the lease of %+v was still live", *live)
		}
	case InProgress:
		if live == nil || live.State != Pending || d.RetryAfter <= 0 || Now(k.now).Add(d.RetryAfter) != live.LeaseExpiresAt {
			k.fail("IN_PROGRESS with retry after %s on %+v", d.RetryAfter, live)
		}
	case AlreadyCompleted, AlreadyRejected:
		want := map[Outcome]State{AlreadyCompleted: Completed, AlreadyRejected: Rejected}[d.Outcome]
		if live == nil || live.State != want {
			k.fail("outcome %s on %+v", d.Outcome, live)
		}
	default:
		k.fail("claim returned outcome %v", d.Outcome)
	}
}

// checkTimes: what Apply returns is storable as is (UTC, microseconds) and
// ordered: created <= updated <= expires; a pending lease ends after it
// began (a lease under a microsecond is cut to none) and the record
// outlives it.
func (k *keyUnderFuzz) checkTimes(r Record) {
	for name, ts := range map[string]time.Time{"created_at": r.CreatedAt, "updated_at": r.UpdatedAt,
		"lease_expires_at": r.LeaseExpiresAt, "expires_at": r.ExpiresAt} {
		if ts != Now(ts) {
			k.fail("%s %v is not UTC at microsecond precision", name, ts)
		}
	}
	if r.UpdatedAt.Before(r.CreatedAt) || r.ExpiresAt.Before(r.UpdatedAt) {
		k.fail("times out of order: created %v, updated %v, expires %v", r.CreatedAt, r.UpdatedAt, r.ExpiresAt)
	}
	if r.UpdatedAt.After(Now(k.now)) {
		k.fail("updated_at %v is after the clock %v", r.UpdatedAt, k.now)
	}
	if r.State == Pending && (r.LeaseExpiresAt.Before(r.UpdatedAt) || r.ExpiresAt.Before(r.LeaseExpiresAt)) {
		k.fail("pending lease %v..%v, record expires %v", r.UpdatedAt, r.LeaseExpiresAt, r.ExpiresAt)
	}
}

func (k *keyUnderFuzz) fail(format string, args ...any) {
	k.t.Helper()
	k.t.Logf("script so far:")
	for _, line := range k.log {
		k.t.Logf("  %s", line)
	}
	k.t.Fatalf(format, args...)
}

func describeCommand(cmd Command) string {
	switch c := cmd.(type) {
	case ClaimParams:
		return "claim digest=" + string(c.Digest) + " lease=" + c.LeaseTTL.String()
	case CompleteParams:
		return "complete token=" + itoa(c.FencingToken) + " result=" + string(c.Result)
	case RejectParams:
		return "reject token=" + itoa(c.FencingToken) + " reason=" + c.Rejection.Reason
	case ExtendLeaseParams:
		return "extend token=" + itoa(c.FencingToken) + " lease=" + c.LeaseTTL.String()
	}
	return "?"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func cloneRecord(r *Record) *Record {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}
