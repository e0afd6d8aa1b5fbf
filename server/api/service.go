package api

import (
	"context"
	"log/slog"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// PageBytesCeiling is the most MaxPageBytes may be: MaxReplyBytes less
// room for the page's framing (a few bytes a record) and its token, so
// that a client left at its defaults accepts every page.
const PageBytesCeiling = MaxReplyBytes - 64<<10

// pageBytes is l's MaxPageBytes, or PageBytesCeiling when unset.
func pageBytes(l policy.Limits) int {
	if l.MaxPageBytes > 0 {
		return l.MaxPageBytes
	}
	return PageBytesCeiling
}

// DedupService implements dedupv1.DedupServiceServer on top of a store.
type DedupService struct {
	dedupv1.UnimplementedDedupServiceServer
	store    store.Store
	policies *policy.Keys
	log      *slog.Logger
	// items, when set, takes a rate-limit token for each item of a batch.
	items ItemLimiter
	// waits holds the claims that wait for an in-flight outcome; nil: none do.
	waits *claimwait.Registry
}

// NewDedupService returns the service; policies resolves each consumer's
// policy in force.
func NewDedupService(s store.Store, policies *policy.Keys, log *slog.Logger) *DedupService {
	return NewDedupServiceWith(s, policies, log, ServiceOptions{})
}

// ServiceOptions are what the service needs beyond its store and policies.
type ServiceOptions struct {
	// Items takes a rate-limit token per batch item; nil: no limit.
	Items ItemLimiter
	// Waits lets claims wait for an in-flight outcome (claimwait.go); nil:
	// every claim is answered at once.
	Waits *claimwait.Registry
}

// NewDedupServiceWith is NewDedupService with options.
func NewDedupServiceWith(s store.Store, policies *policy.Keys, log *slog.Logger, opts ServiceOptions) *DedupService {
	return &DedupService{store: s, policies: policies, log: log, items: opts.Items, waits: opts.Waits}
}

// policy checks the request fields that do not depend on the policy, then
// loads the consumer's policy and hands it to the checks that do. The
// caller has nothing to do until both have passed.
func (s *DedupService) policy(ctx context.Context, v *validator, consumer string, checks func(*validator, policy.Effective)) (policy.Effective, error) {
	if err := v.result(); err != nil {
		return policy.Effective{}, err
	}
	p, err := s.policies.For(ctx, consumer)
	if err != nil {
		return policy.Effective{}, err
	}
	checks(v, p)
	return p, v.result()
}

// fail turns err into the status the caller sees, logging the causes that
// the caller is not told.
func (s *DedupService) fail(ctx context.Context, err error, consumer, key string) error {
	return failWith(ctx, s.log, err, keyCall(consumer, key))
}

func (s *DedupService) Claim(ctx context.Context, req *dedupv1.ClaimRequest) (*dedupv1.ClaimResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	v.bytes("digest", req.GetDigest(), MaxDigestBytes)
	lease := v.leaseTTL(req.GetLeaseTtl(), MaxTTLCeiling)
	v.text("owner", req.GetOwner(), MaxOwnerBytes)
	wait := v.wait(req.GetWait())
	policy, err := s.policy(ctx, &v, req.GetConsumer(), func(v *validator, p policy.Effective) {
		v.digestRequired(req.GetDigest(), p)
		v.leaseWithin(lease, p)
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	params := store.ClaimParams{
		Consumer: req.GetConsumer(),
		Key:      req.GetKey(),
		Digest:   req.GetDigest(),
		LeaseTTL: lease,
		Owner:    req.GetOwner(),
		Policy:   policy.Store,
	}
	res, err := s.store.Claim(ctx, params)
	if err == nil {
		res, err = s.awaitClaim(ctx, req, params, wait, res)
	}
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
	policy, err := s.policy(ctx, &v, req.GetConsumer(), func(v *validator, p policy.Effective) {
		v.bytes("result", req.GetResult(), p.MaxResultBytes)
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	rec, err := s.store.Complete(ctx, store.CompleteParams{
		Consumer:     req.GetConsumer(),
		Key:          req.GetKey(),
		FencingToken: req.GetFencingToken(),
		Result:       req.GetResult(),
		Policy:       policy.Store,
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.CompleteResponse{Record: recordpb.FromStore(rec)}, nil
}

func (s *DedupService) Reject(ctx context.Context, req *dedupv1.RejectRequest) (*dedupv1.RejectResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	v.fencingToken(req.GetFencingToken())
	v.text("reason", req.GetReason(), MaxReasonBytes)
	v.text("message", req.GetMessage(), MaxMessageBytes)
	policy, err := s.policy(ctx, &v, req.GetConsumer(), func(v *validator, p policy.Effective) {
		v.bytes("detail", req.GetDetail(), p.MaxResultBytes)
	})
	if err != nil {
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
		Policy: policy.Store,
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.RejectResponse{Record: recordpb.FromStore(rec)}, nil
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
	return &dedupv1.LookupResponse{Record: recordpb.FromStore(rec)}, nil
}

func (s *DedupService) ExtendLease(ctx context.Context, req *dedupv1.ExtendLeaseRequest) (*dedupv1.ExtendLeaseResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	v.fencingToken(req.GetFencingToken())
	lease := v.leaseTTL(req.GetLeaseTtl(), MaxTTLCeiling)
	policy, err := s.policy(ctx, &v, req.GetConsumer(), func(v *validator, p policy.Effective) {
		v.leaseWithin(lease, p)
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	rec, err := s.store.ExtendLease(ctx, store.ExtendLeaseParams{
		Consumer:     req.GetConsumer(),
		Key:          req.GetKey(),
		FencingToken: req.GetFencingToken(),
		LeaseTTL:     lease,
		Policy:       policy.Store,
	})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.ExtendLeaseResponse{Record: recordpb.FromStore(rec)}, nil
}
