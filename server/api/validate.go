package api

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// Input limits that do not depend on configuration. They keep every value
// storable in every backend (PostgreSQL TEXT cannot hold NUL) and bounded in
// size before any store work is done.
const (
	MaxKeyBytes     = 512
	MaxDigestBytes  = 64
	MaxOwnerBytes   = 256
	MaxReasonBytes  = 128
	MaxMessageBytes = 4096
)

// Ceilings on what a consumer's policy may allow. MaxResultBytesCeiling also
// sizes the gRPC receive limit, so that a result too large for its
// consumer's policy is refused by validation, naming the field, rather than
// by the transport. MaxTTLCeiling keeps every expiry far from overflow.
const (
	MaxResultBytesCeiling = 16 << 20
	MaxTTLCeiling         = 10 * 365 * 24 * time.Hour
)

// validator collects the first problem found in a request, so that each
// handler reads as a list of checks.
// Its prefix names the batch item checked, such as "items[3].".
type validator struct {
	err    *rpcerrors.FieldError
	prefix string
}

func (v *validator) fail(field, format string, args ...any) {
	if v.err == nil {
		v.err = &rpcerrors.FieldError{Field: v.prefix + field, Problem: fmt.Sprintf(format, args...)}
	}
}

func (v *validator) result() error {
	if v.err == nil {
		return nil
	}
	return v.err
}

func (v *validator) consumer(s string) {
	if problem := consumer.Problem(s); problem != "" {
		v.fail("consumer", "%s", problem)
	}
}

func (v *validator) key(s string) {
	if s == "" {
		v.fail("key", "is required")
		return
	}
	v.text("key", s, MaxKeyBytes)
}

// validKey reports whether s passes the checks of a request's key.
func validKey(s string) bool {
	var v validator
	v.key(s)
	return v.err == nil
}

// text checks a free-text field: valid UTF-8, no NUL, at most limit bytes.
func (v *validator) text(field, s string, limit int) {
	switch {
	case len(s) > limit:
		v.fail(field, "is %d bytes, more than the limit of %d", len(s), limit)
	case !utf8.ValidString(s):
		v.fail(field, "is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		v.fail(field, "must not contain NUL characters")
	}
}

func (v *validator) bytes(field string, b []byte, limit int) {
	if len(b) > limit {
		v.fail(field, "is %d bytes, more than the limit of %d", len(b), limit)
	}
}

func (v *validator) fencingToken(token int64) {
	if token <= 0 {
		v.fail("fencing_token", "must be the positive token returned by Claim")
	}
}

// duration reads a duration field by the one rule every duration of the
// API follows: a well-formed google.protobuf.Duration, within the ceiling,
// and a whole number of microseconds, the precision every store keeps
// (PostgreSQL's TIMESTAMPTZ and INTERVAL hold microseconds), so that what
// is stored is what was asked. ok is false when it failed the field; an
// unset field reads as zero.
func (v *validator) duration(field string, d *durationpb.Duration) (time.Duration, bool) {
	if d == nil {
		return 0, true
	}
	if err := d.CheckValid(); err != nil {
		v.fail(field, "is not a valid duration: %v", err)
		return 0, false
	}
	ttl := d.AsDuration()
	switch {
	case ttl > MaxTTLCeiling:
		v.fail(field, "is %s, more than the ceiling of %s", ttl, MaxTTLCeiling)
	case ttl%time.Microsecond != 0:
		v.fail(field, "must be a whole number of microseconds, got %s", ttl)
	default:
		return ttl, true
	}
	return 0, false
}

// leaseTTL returns the requested lease, zero when unset (the policy default
// then applies).
func (v *validator) leaseTTL(d *durationpb.Duration, limit time.Duration) time.Duration {
	return v.leaseTTLOf("lease_ttl", d, limit)
}

// leaseTTLOf is leaseTTL for a lease field of another name.
func (v *validator) leaseTTLOf(field string, d *durationpb.Duration, limit time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	ttl, ok := v.duration(field, d)
	switch {
	case !ok:
	case ttl <= 0:
		v.fail(field, "must be positive, got %s", ttl)
	case ttl > limit:
		v.fail(field, "is %s, more than the maximum of %s", ttl, limit)
	}
	return ttl
}

// leaseWithin and digestRequired are the checks that depend on the
// consumer's policy, made once it is known; leaseTTL ran first against the
// ceiling.
func (v *validator) leaseWithin(lease time.Duration, p policy.Effective) {
	if lease > p.MaxLeaseTTL {
		v.fail("lease_ttl", "is %s, more than the maximum of %s", lease, p.MaxLeaseTTL)
	}
}

func (v *validator) digestRequired(digest []byte, p policy.Effective) {
	if p.RequireDigest && len(digest) == 0 {
		v.fail("digest", "is required by the consumer's policy")
	}
}
