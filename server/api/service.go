// Package api serves dedup.v1.DedupService over gRPC: it validates each
// request before any store work, resolves the policy in force, calls the
// store, and turns every outcome and error into its wire form.
package api

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// Limits are the server-wide bounds on what a caller may ask for.
type Limits struct {
	// MaxLeaseTTL caps lease_ttl on Claim and ExtendLease.
	MaxLeaseTTL time.Duration
	// MaxResultBytes caps Complete's result and Reject's detail.
	MaxResultBytes int
}

// DedupService implements dedupv1.DedupServiceServer on top of a store.
type DedupService struct {
	dedupv1.UnimplementedDedupServiceServer
	store  store.Store
	policy store.Policy
	limits Limits
	log    *slog.Logger
}

// NewDedupService returns the service. policy applies to every consumer.
func NewDedupService(s store.Store, policy store.Policy, limits Limits, log *slog.Logger) *DedupService {
	return &DedupService{store: s, policy: policy, limits: limits, log: log}
}

// fail turns err into the status the caller sees, logging the causes that
// the caller is not told.
func (s *DedupService) fail(ctx context.Context, err error, consumer, key string) error {
	st := Status(err, consumer, key)
	if st.Code() == codes.Internal {
		s.log.ErrorContext(ctx, "internal error", "consumer", consumer, "key", key, "err", err)
	}
	return st.Err()
}

func (s *DedupService) Claim(ctx context.Context, req *dedupv1.ClaimRequest) (*dedupv1.ClaimResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	v.bytes("digest", req.GetDigest(), MaxDigestBytes)
	lease := v.leaseTTL(req.GetLeaseTtl(), s.limits.MaxLeaseTTL)
	v.text("owner", req.GetOwner(), MaxOwnerBytes)
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	res, err := s.store.Claim(ctx, store.ClaimParams{
		Consumer: req.GetConsumer(),
		Key:      req.GetKey(),
		Digest:   req.GetDigest(),
		LeaseTTL: lease,
		Owner:    req.GetOwner(),
		Policy:   s.policy,
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return claimResponse(res), nil
}

func (s *DedupService) Complete(ctx context.Context, req *dedupv1.CompleteRequest) (*dedupv1.CompleteResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	v.fencingToken(req.GetFencingToken())
	v.bytes("result", req.GetResult(), s.limits.MaxResultBytes)
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	rec, err := s.store.Complete(ctx, store.CompleteParams{
		Consumer:     req.GetConsumer(),
		Key:          req.GetKey(),
		FencingToken: req.GetFencingToken(),
		Result:       req.GetResult(),
		Policy:       s.policy,
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.CompleteResponse{Record: RecordToProto(rec)}, nil
}

func (s *DedupService) Reject(ctx context.Context, req *dedupv1.RejectRequest) (*dedupv1.RejectResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	v.fencingToken(req.GetFencingToken())
	v.text("reason", req.GetReason(), MaxReasonBytes)
	v.text("message", req.GetMessage(), MaxMessageBytes)
	v.bytes("detail", req.GetDetail(), s.limits.MaxResultBytes)
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	rec, err := s.store.Reject(ctx, store.RejectParams{
		Consumer:     req.GetConsumer(),
		Key:          req.GetKey(),
		FencingToken: req.GetFencingToken(),
		Rejection: store.Rejection{
			Reason:    req.GetReason(),
			Message:   req.GetMessage(),
			Detail:    req.GetDetail(),
			Retryable: req.GetRetryable(),
		},
		Policy: s.policy,
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.RejectResponse{Record: RecordToProto(rec)}, nil
}

func (s *DedupService) Lookup(ctx context.Context, req *dedupv1.LookupRequest) (*dedupv1.LookupResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	rec, err := s.store.Lookup(ctx, req.GetConsumer(), req.GetKey())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.LookupResponse{Record: RecordToProto(rec)}, nil
}

func (s *DedupService) ExtendLease(ctx context.Context, req *dedupv1.ExtendLeaseRequest) (*dedupv1.ExtendLeaseResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	v.fencingToken(req.GetFencingToken())
	lease := v.leaseTTL(req.GetLeaseTtl(), s.limits.MaxLeaseTTL)
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	rec, err := s.store.ExtendLease(ctx, store.ExtendLeaseParams{
		Consumer:     req.GetConsumer(),
		Key:          req.GetKey(),
		FencingToken: req.GetFencingToken(),
		LeaseTTL:     lease,
		Policy:       s.policy,
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.ExtendLeaseResponse{Record: RecordToProto(rec)}, nil
}
