package api

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// PolicyToProto converts a stored policy to its API form; unset (zero)
// fields stay unset.
func PolicyToProto(p store.ConsumerPolicy) *dedupv1.Policy {
	return &dedupv1.Policy{
		Consumer:        p.Consumer,
		CompletedTtl:    duration(p.CompletedTTL),
		RejectedTtl:     duration(p.RejectedTTL),
		ReleasedTtl:     duration(p.ReleasedTTL),
		DefaultLeaseTtl: duration(p.DefaultLeaseTTL),
		MaxLeaseTtl:     duration(p.MaxLeaseTTL),
		MaxResultBytes:  p.MaxResultBytes,
		RequireDigest:   p.RequireDigest,
		UpdatedAt:       recordpb.Timestamp(p.UpdatedAt),
	}
}

// EffectiveToProto converts the policy in force for consumer, every field
// set.
func EffectiveToProto(consumer string, e policy.Effective) *dedupv1.Policy {
	return PolicyToProto(store.ConsumerPolicy{
		Consumer:        consumer,
		CompletedTTL:    e.Store.CompletedTTL,
		RejectedTTL:     e.Store.RejectedTTL,
		ReleasedTTL:     e.Store.ReleasedTTL,
		DefaultLeaseTTL: e.Store.DefaultLeaseTTL,
		MaxLeaseTTL:     e.MaxLeaseTTL,
		MaxResultBytes:  int64(e.MaxResultBytes),
		RequireDigest:   e.RequireDigest,
	})
}

func duration(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// policyFromProto validates the policy of a SetPolicy request. Field names
// in errors are paths from the request, such as policy.completed_ttl.
// updated_at is output only and ignored.
func policyFromProto(p *dedupv1.Policy, d policy.Defaults) (store.ConsumerPolicy, error) {
	var v validator
	if p == nil {
		v.fail("policy", "is required")
		return store.ConsumerPolicy{}, v.result()
	}
	v.consumerField("policy.consumer", p.GetConsumer())
	cp := store.ConsumerPolicy{
		Consumer:        p.GetConsumer(),
		CompletedTTL:    v.policyTTL("policy.completed_ttl", p.GetCompletedTtl()),
		RejectedTTL:     v.policyTTL("policy.rejected_ttl", p.GetRejectedTtl()),
		ReleasedTTL:     v.policyTTL("policy.released_ttl", p.GetReleasedTtl()),
		DefaultLeaseTTL: v.policyTTL("policy.default_lease_ttl", p.GetDefaultLeaseTtl()),
		MaxLeaseTTL:     v.policyTTL("policy.max_lease_ttl", p.GetMaxLeaseTtl()),
		MaxResultBytes:  p.GetMaxResultBytes(),
		RequireDigest:   p.GetRequireDigest(),
	}
	switch n := cp.MaxResultBytes; {
	case n < 0:
		v.fail("policy.max_result_bytes", "must not be negative (0 takes the server default), got %d", n)
	case n > MaxResultBytesCeiling:
		v.fail("policy.max_result_bytes", "is %d, more than the ceiling of %d", n, MaxResultBytesCeiling)
	}
	if err := v.result(); err != nil {
		return store.ConsumerPolicy{}, err
	}
	// Checked on the policy in force, so that a default lease set alone is
	// held to the server's maximum, and a maximum set alone to the server's
	// default lease.
	if defLease, maxLease := policy.LeaseBounds(cp, d); defLease > maxLease {
		field := "policy.default_lease_ttl"
		if cp.DefaultLeaseTTL == 0 {
			field = "policy.max_lease_ttl"
		}
		v.fail(field, "the default lease %s would be longer than the maximum lease %s", defLease, maxLease)
	}
	return cp, v.result()
}

func (v *validator) consumerField(field, s string) {
	var inner validator
	inner.consumer(s)
	if inner.err != nil {
		v.fail(field, "%s", inner.err.Problem)
	}
}

// policyTTL checks a policy duration by the rule of every duration
// (validator.duration); zero (or unset) takes the default.
func (v *validator) policyTTL(field string, d *durationpb.Duration) time.Duration {
	ttl, ok := v.duration(field, d)
	if ok && ttl < 0 {
		v.fail(field, "must not be negative (0 takes the server default), got %s", ttl)
	}
	return ttl
}

// policyWarnings tells an operator what a policy change puts at risk. The
// TTLs only ever apply to records that finish from now on (stored records
// keep their expiry), so the risk is of forgetting sooner than a
// redelivery can come.
func policyWarnings(before, after policy.Effective, defaults policy.Defaults) []string {
	var w []string
	shorter := func(name string, was, now time.Duration, what string) {
		if now < was {
			w = append(w, fmt.Sprintf("%s shrinks from %s to %s: %s finishing from now on are forgotten after %s, "+
				"and a redelivery after that runs the work again", name, short(was), short(now), what, short(now)))
		}
	}
	shorter("completed_ttl", before.Store.CompletedTTL, after.Store.CompletedTTL, "completed records")
	shorter("rejected_ttl", before.Store.RejectedTTL, after.Store.RejectedTTL, "rejected records")
	shorter("released_ttl", before.Store.ReleasedTTL, after.Store.ReleasedTTL, "released and abandoned claims")
	if after.Store.CompletedTTL < defaults.Policy.CompletedTTL {
		w = append(w, fmt.Sprintf("completed_ttl %s is shorter than the server default %s (--completed-ttl); "+
			"make sure it is longer than this consumer's longest redelivery window",
			short(after.Store.CompletedTTL), short(defaults.Policy.CompletedTTL)))
	}
	if after.RequireDigest && !before.RequireDigest {
		w = append(w, "require_digest is now on: claims without a digest are refused with INVALID_FIELD")
	}
	return w
}

// short writes a duration as an operator would: 72h, not 72h0m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
