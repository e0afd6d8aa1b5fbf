package api

import (
	"context"
	"errors"
	"log/slog"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// AdminService implements dedupv1.AdminServiceServer: policies, deleting
// records one by one or in bulk, and counts.
type AdminService struct {
	dedupv1.UnimplementedAdminServiceServer
	store    store.Backend
	policies *policy.Keys
	log      *slog.Logger
}

// NewAdminService returns the service. policies must be the resolver the
// DedupService of this server uses, so that a policy change made here is
// seen by the next call at once.
func NewAdminService(s store.Backend, policies *policy.Keys, log *slog.Logger) *AdminService {
	return &AdminService{store: s, policies: policies, log: log}
}

func (s *AdminService) fail(ctx context.Context, err error, consumer, key string) error {
	return failWith(ctx, s.log, err, keyCall(consumer, key))
}

// storedPolicy returns a consumer's stored policy, nil when it has none.
func (s *AdminService) storedPolicy(ctx context.Context, consumer string) (*store.ConsumerPolicy, error) {
	p, err := s.store.GetPolicy(ctx, consumer)
	if errors.Is(err, store.ErrNoPolicy) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// resolve returns the policy in force given a stored one, or none.
func (s *AdminService) resolve(consumer string, stored *store.ConsumerPolicy) policy.Effective {
	if stored == nil {
		return s.policies.Resolve(store.ConsumerPolicy{Consumer: consumer})
	}
	return s.policies.Resolve(*stored)
}

func (s *AdminService) SetPolicy(ctx context.Context, req *dedupv1.SetPolicyRequest) (*dedupv1.SetPolicyResponse, error) {
	consumer := req.GetPolicy().GetConsumer()
	next, err := policyFromProto(req.GetPolicy(), s.policies.Defaults())
	if err != nil {
		return nil, s.fail(ctx, err, consumer, "")
	}
	// Read before the write, not in one transaction with it: under two
	// concurrent SetPolicy calls "previous" may be either one's.
	prev, err := s.storedPolicy(ctx, consumer)
	if err != nil {
		return nil, s.fail(ctx, err, consumer, "")
	}
	stats, err := s.store.Stats(ctx, consumer)
	if err != nil {
		return nil, s.fail(ctx, err, consumer, "")
	}
	if !req.GetDryRun() {
		next, err = s.store.PutPolicy(ctx, next)
		// Even after an error: the write may have committed all the same
		// (a connection lost at COMMIT), and a read too many costs little.
		s.policies.Invalidate(consumer)
		if err != nil {
			return nil, s.fail(ctx, err, consumer, "")
		}
	}
	before, after := s.resolve(consumer, prev), s.policies.Resolve(next)
	resp := &dedupv1.SetPolicyResponse{
		Policy:    PolicyToProto(next),
		Effective: EffectiveToProto(consumer, after),
		Warnings:  policyWarnings(before, after, s.policies.Defaults()),
	}
	if prev != nil {
		resp.Previous = PolicyToProto(*prev)
	}
	for _, c := range stats { // one consumer at most
		resp.StoredRecords = c.Completed + c.Rejected + c.Released
		resp.PendingRecords = c.Pending
	}
	return resp, nil
}

func (s *AdminService) GetPolicy(ctx context.Context, req *dedupv1.GetPolicyRequest) (*dedupv1.GetPolicyResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	stored, err := s.storedPolicy(ctx, req.GetConsumer())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	resp := &dedupv1.GetPolicyResponse{Effective: EffectiveToProto(req.GetConsumer(), s.resolve(req.GetConsumer(), stored))}
	if stored != nil {
		resp.Policy = PolicyToProto(*stored)
	}
	return resp, nil
}

func (s *AdminService) ListPolicies(ctx context.Context, _ *dedupv1.ListPoliciesRequest) (*dedupv1.ListPoliciesResponse, error) {
	stored, err := s.store.ListPolicies(ctx)
	if err != nil {
		return nil, s.fail(ctx, err, "", "")
	}
	resp := &dedupv1.ListPoliciesResponse{
		Defaults: EffectiveToProto("", s.policies.Resolve(store.ConsumerPolicy{})),
		Policies: make([]*dedupv1.Policy, len(stored)),
	}
	for i, p := range stored {
		resp.Policies[i] = PolicyToProto(p)
	}
	return resp, nil
}

func (s *AdminService) DeletePolicy(ctx context.Context, req *dedupv1.DeletePolicyRequest) (*dedupv1.DeletePolicyResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	deleted, err := s.store.DeletePolicy(ctx, req.GetConsumer())
	s.policies.Invalidate(req.GetConsumer()) // even after an error, as in SetPolicy
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	return &dedupv1.DeletePolicyResponse{Policy: PolicyToProto(deleted)}, nil
}

func (s *AdminService) DeleteRecord(ctx context.Context, req *dedupv1.DeleteRecordRequest) (*dedupv1.DeleteRecordResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	v.key(req.GetKey())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	rec, err := s.store.DeleteRecord(ctx, req.GetConsumer(), req.GetKey())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetKey())
	}
	return &dedupv1.DeleteRecordResponse{Record: recordpb.FromStore(rec)}, nil
}

func (s *AdminService) Stats(ctx context.Context, req *dedupv1.StatsRequest) (*dedupv1.StatsResponse, error) {
	if req.GetConsumer() != "" {
		var v validator
		v.consumer(req.GetConsumer())
		if err := v.result(); err != nil {
			return nil, s.fail(ctx, err, req.GetConsumer(), "")
		}
	}
	stats, err := s.store.Stats(ctx, req.GetConsumer())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	streams, err := s.store.StreamStats(ctx, req.GetConsumer())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	return &dedupv1.StatsResponse{Consumers: joinStats(stats, streams)}, nil
}
