package api

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// policyOnlyStore has no policies and nothing else: any other method
// panics on the nil Store it embeds.
type policyOnlyStore struct{ store.Store }

func (policyOnlyStore) GetPolicy(context.Context, string) (store.ConsumerPolicy, error) {
	return store.ConsumerPolicy{}, store.ErrNoPolicy
}

// A service whose store only reads policies: every case here must be
// refused before any record is touched, or the test panics.
func serviceWithoutStore() *DedupService {
	d := policy.Defaults{Policy: testPolicy, Limits: policy.Limits{MaxLeaseTTL: time.Minute, MaxResultBytes: 100}}
	return NewDedupService(nil, policy.NewKeys(policyOnlyStore{}, d, 0), slog.New(slog.DiscardHandler))
}

func TestInvalidRequestsNameTheField(t *testing.T) {
	s := serviceWithoutStore()
	ctx := context.Background()
	claim := func(mut func(*dedupv1.ClaimRequest)) func() error {
		return func() error {
			r := &dedupv1.ClaimRequest{Consumer: "orders", Key: "k"}
			mut(r)
			_, err := s.Claim(ctx, r)
			return err
		}
	}
	complete := func(mut func(*dedupv1.CompleteRequest)) func() error {
		return func() error {
			r := &dedupv1.CompleteRequest{Consumer: "orders", Key: "k", FencingToken: 1}
			mut(r)
			_, err := s.Complete(ctx, r)
			return err
		}
	}
	reject := func(mut func(*dedupv1.RejectRequest)) func() error {
		return func() error {
			r := &dedupv1.RejectRequest{Consumer: "orders", Key: "k", FencingToken: 1}
			mut(r)
			_, err := s.Reject(ctx, r)
			return err
		}
	}
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"empty consumer", claim(func(r *dedupv1.ClaimRequest) { r.Consumer = "" }), "consumer"},
		{"upper-case consumer", claim(func(r *dedupv1.ClaimRequest) { r.Consumer = "Orders" }), "consumer"},
		{"consumer starting with dash", claim(func(r *dedupv1.ClaimRequest) { r.Consumer = "-x" }), "consumer"},
		{"consumer of 129 chars", claim(func(r *dedupv1.ClaimRequest) { r.Consumer = strings.Repeat("a", 129) }), "consumer"},
		{"empty key", claim(func(r *dedupv1.ClaimRequest) { r.Key = "" }), "key"},
		{"key of 513 bytes", claim(func(r *dedupv1.ClaimRequest) { r.Key = strings.Repeat("k", 513) }), "key"},
		{"key with NUL", claim(func(r *dedupv1.ClaimRequest) { r.Key = "a\x00b" }), "key"},
		{"digest of 65 bytes", claim(func(r *dedupv1.ClaimRequest) { r.Digest = make([]byte, 65) }), "digest"},
		{"zero lease", claim(func(r *dedupv1.ClaimRequest) { r.LeaseTtl = durationpb.New(0) }), "lease_ttl"},
		{"negative lease", claim(func(r *dedupv1.ClaimRequest) { r.LeaseTtl = durationpb.New(-time.Second) }), "lease_ttl"},
		{"lease over maximum", claim(func(r *dedupv1.ClaimRequest) { r.LeaseTtl = durationpb.New(2 * time.Minute) }), "lease_ttl"},
		{"lease of 1ns", claim(func(r *dedupv1.ClaimRequest) { r.LeaseTtl = durationpb.New(time.Nanosecond) }), "lease_ttl"},
		{"sub-microsecond lease", claim(func(r *dedupv1.ClaimRequest) { r.LeaseTtl = durationpb.New(time.Second + 500) }), "lease_ttl"},
		{"malformed lease", claim(func(r *dedupv1.ClaimRequest) { r.LeaseTtl = &durationpb.Duration{Seconds: 1, Nanos: -1} }), "lease_ttl"},
		{"long owner", claim(func(r *dedupv1.ClaimRequest) { r.Owner = strings.Repeat("o", 257) }), "owner"},
		{"zero token", complete(func(r *dedupv1.CompleteRequest) { r.FencingToken = 0 }), "fencing_token"},
		{"result over limit", complete(func(r *dedupv1.CompleteRequest) { r.Result = make([]byte, 101) }), "result"},
		{"long reason", reject(func(r *dedupv1.RejectRequest) { r.Reason = strings.Repeat("r", 129) }), "reason"},
		{"long message", reject(func(r *dedupv1.RejectRequest) { r.Message = strings.Repeat("m", 4097) }), "message"},
		{"detail over limit", reject(func(r *dedupv1.RejectRequest) { r.Detail = make([]byte, 101) }), "detail"},
		{"lookup without key", func() error {
			_, err := s.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "orders"})
			return err
		}, "key"},
		{"extend with negative token", func() error {
			_, err := s.ExtendLease(ctx, &dedupv1.ExtendLeaseRequest{Consumer: "orders", Key: "k", FencingToken: -3})
			return err
		}, "fencing_token"},
		{"extend by a sub-microsecond lease", func() error {
			_, err := s.ExtendLease(ctx, &dedupv1.ExtendLeaseRequest{Consumer: "orders", Key: "k", FencingToken: 1,
				LeaseTtl: durationpb.New(time.Second + time.Nanosecond)})
			return err
		}, "lease_ttl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(tc.call())
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("code = %v (%s), want InvalidArgument", st.Code(), st.Message())
			}
			if info := errorInfo(t, st); info.GetReason() != rpcerrors.ReasonInvalidField || info.GetMetadata()["field"] != tc.field {
				t.Fatalf("ErrorInfo = %v, want reason %s naming %q", info, rpcerrors.ReasonInvalidField, tc.field)
			}
			var violation *errdetails.BadRequest
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					violation = br
				}
			}
			if violation == nil || violation.GetFieldViolations()[0].GetField() != tc.field {
				t.Fatalf("BadRequest = %v, want a violation of %q", violation, tc.field)
			}
		})
	}
}

func TestValidLimitsAreAccepted(t *testing.T) {
	var v validator
	v.consumer(strings.Repeat("a", 128))
	v.consumer("a.b_c-9")
	v.key(strings.Repeat("k", MaxKeyBytes))
	v.key("ключ/🔑 with 'quotes' and %_\\")
	v.bytes("digest", make([]byte, MaxDigestBytes), MaxDigestBytes)
	if got := v.leaseTTL(durationpb.New(time.Minute), time.Minute); got != time.Minute {
		t.Fatalf("lease = %s, want 1m", got)
	}
	if got := v.leaseTTL(nil, time.Minute); got != 0 {
		t.Fatalf("unset lease = %s, want 0 (policy default)", got)
	}
	if err := v.result(); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
}
