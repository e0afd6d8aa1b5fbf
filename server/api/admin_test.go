package api

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// wantStatus asserts a call's gRPC code and ErrorInfo reason, and for
// INVALID_FIELD the field named.
func wantStatus(t *testing.T, err error, code codes.Code, reason, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("error = %v, want %v", err, code)
	}
	info := errorInfo(t, st)
	if info.GetReason() != reason || info.GetMetadata()["field"] != field {
		t.Fatalf("ErrorInfo = %v, want reason %s field %q", info, reason, field)
	}
}

// clients of one test server.
type clients struct {
	dedup dedupv1.DedupServiceClient
	admin dedupv1.AdminServiceClient
}

func newClients(t *testing.T, policyCacheTTL time.Duration) clients {
	conn := newServer(t, policyCacheTTL)
	return clients{dedupv1.NewDedupServiceClient(conn), dedupv1.NewAdminServiceClient(conn)}
}

// finish claims and completes a key and returns the completed record.
func (c clients) finish(t *testing.T, consumer, key string) *dedupv1.Record {
	t.Helper()
	ctx := context.Background()
	got, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key, Digest: []byte("d")})
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.dedup.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key,
		FencingToken: got.GetFencingToken(), Result: []byte("ok")})
	if err != nil {
		t.Fatal(err)
	}
	return done.GetRecord()
}

func (c clients) setPolicy(t *testing.T, p *dedupv1.Policy) *dedupv1.SetPolicyResponse {
	t.Helper()
	resp, err := c.admin.SetPolicy(context.Background(), &dedupv1.SetPolicyRequest{Policy: p})
	if err != nil {
		t.Fatalf("SetPolicy(%v): %v", p, err)
	}
	return resp
}

func TestSetPolicyRefusesBadPolicies(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	d := durationpb.New
	cases := []struct {
		name   string
		policy *dedupv1.Policy
		field  string
	}{
		{"no policy", nil, "policy"},
		{"no consumer", &dedupv1.Policy{CompletedTtl: d(time.Hour)}, "policy.consumer"},
		{"bad consumer", &dedupv1.Policy{Consumer: "Inventory"}, "policy.consumer"},
		{"negative completed ttl", &dedupv1.Policy{Consumer: "inv", CompletedTtl: d(-time.Hour)}, "policy.completed_ttl"},
		{"malformed rejected ttl", &dedupv1.Policy{Consumer: "inv", RejectedTtl: &durationpb.Duration{Seconds: 1, Nanos: -1}}, "policy.rejected_ttl"},
		{"sub-microsecond released ttl", &dedupv1.Policy{Consumer: "inv", ReleasedTtl: d(time.Second + time.Nanosecond)}, "policy.released_ttl"},
		{"ttl above the ceiling", &dedupv1.Policy{Consumer: "inv", CompletedTtl: d(MaxTTLCeiling + time.Hour)}, "policy.completed_ttl"},
		{"negative result limit", &dedupv1.Policy{Consumer: "inv", MaxResultBytes: -1}, "policy.max_result_bytes"},
		{"result limit above the ceiling", &dedupv1.Policy{Consumer: "inv", MaxResultBytes: MaxResultBytesCeiling + 1}, "policy.max_result_bytes"},
		{"default lease above the server maximum", &dedupv1.Policy{Consumer: "inv", DefaultLeaseTtl: d(2 * time.Hour)}, "policy.default_lease_ttl"},
		{"maximum below the server default lease", &dedupv1.Policy{Consumer: "inv", MaxLeaseTtl: d(time.Second)}, "policy.max_lease_ttl"},
		{"default lease above its own maximum", &dedupv1.Policy{Consumer: "inv", DefaultLeaseTtl: d(time.Minute), MaxLeaseTtl: d(time.Second)}, "policy.default_lease_ttl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.admin.SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: tc.policy})
			wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, tc.field)
		})
	}
	list, err := c.admin.ListPolicies(ctx, &dedupv1.ListPoliciesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetPolicies()) != 0 {
		t.Fatalf("refused policies were stored: %v", list.GetPolicies())
	}
}

func TestSetPolicyDryRunReportsAndChangesNothing(t *testing.T) {
	c := newClients(t, time.Hour)
	ctx := context.Background()
	c.finish(t, "inv", "done-1")
	c.finish(t, "inv", "done-2")
	if _, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "busy"}); err != nil {
		t.Fatal(err)
	}
	c.finish(t, "other", "x")

	shorter := &dedupv1.Policy{Consumer: "inv", CompletedTtl: durationpb.New(30 * time.Minute)}
	dry, err := c.admin.SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: shorter, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.GetStoredRecords() != 2 || dry.GetPendingRecords() != 1 {
		t.Fatalf("dry run counts stored=%d pending=%d, want 2 and 1", dry.GetStoredRecords(), dry.GetPendingRecords())
	}
	if dry.GetPrevious() != nil || dry.GetEffective().GetCompletedTtl().AsDuration() != 30*time.Minute ||
		dry.GetEffective().GetRejectedTtl().AsDuration() != testPolicy.RejectedTTL {
		t.Fatalf("dry run = %v, want no previous and the new effective policy", dry)
	}
	if w := strings.Join(dry.GetWarnings(), "\n"); !strings.Contains(w, "completed_ttl shrinks from 1h to 30m") ||
		!strings.Contains(w, "shorter than the server default") {
		t.Fatalf("warnings = %q, want the shrink and the default warned about", dry.GetWarnings())
	}
	got, err := c.admin.GetPolicy(ctx, &dedupv1.GetPolicyRequest{Consumer: "inv"})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetPolicy() != nil || got.GetEffective().GetCompletedTtl().AsDuration() != testPolicy.CompletedTTL {
		t.Fatalf("after a dry run GetPolicy = %v, want no policy and the defaults", got)
	}
	// The dry run left the cache alone too: the hot path still uses 1h.
	if rec := c.finish(t, "inv", "after-dry"); rec.GetExpiresAt().AsTime().Sub(rec.GetUpdatedAt().AsTime()) != testPolicy.CompletedTTL {
		t.Fatalf("after a dry run a completion kept for %s", rec.GetExpiresAt().AsTime().Sub(rec.GetUpdatedAt().AsTime()))
	}

	set := c.setPolicy(t, shorter)
	if set.GetPolicy().GetUpdatedAt() == nil || set.GetPolicy().GetCompletedTtl().AsDuration() != 30*time.Minute {
		t.Fatalf("SetPolicy = %v, want the stored policy with updated_at", set)
	}
	longer := c.setPolicy(t, &dedupv1.Policy{Consumer: "inv", CompletedTtl: durationpb.New(2 * time.Hour)})
	if longer.GetPrevious().GetCompletedTtl().AsDuration() != 30*time.Minute || len(longer.GetWarnings()) != 0 {
		t.Fatalf("second SetPolicy = %v, want the first as previous and no warnings", longer)
	}
}

// TestConsumerPolicyAppliesOnTheNextCall: with a long cache bound, a change
// through this server applies at once, to its consumer only.
func TestConsumerPolicyAppliesOnTheNextCall(t *testing.T) {
	c := newClients(t, time.Hour)
	ctx := context.Background()
	keptFor := func(r *dedupv1.Record) time.Duration { return r.GetExpiresAt().AsTime().Sub(r.GetUpdatedAt().AsTime()) }
	if got := keptFor(c.finish(t, "inv", "k1")); got != testPolicy.CompletedTTL {
		t.Fatalf("default policy: kept %s", got)
	}
	c.setPolicy(t, &dedupv1.Policy{Consumer: "inv", CompletedTtl: durationpb.New(72 * time.Hour),
		MaxLeaseTtl: durationpb.New(2 * time.Hour), MaxResultBytes: 4, RequireDigest: true})
	if got := keptFor(c.finish(t, "inv", "k2")); got != 72*time.Hour {
		t.Fatalf("after SetPolicy: kept %s, want 72h", got)
	}
	if got := keptFor(c.finish(t, "other", "k2")); got != testPolicy.CompletedTTL {
		t.Fatalf("another consumer: kept %s, want the default", got)
	}

	_, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "no-digest"})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "digest")
	if _, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "other", Key: "no-digest"}); err != nil {
		t.Fatalf("another consumer without a digest: %v", err)
	}
	long := durationpb.New(90 * time.Minute) // above the server's 1h, within inv's 2h
	claim, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "long", Digest: []byte("d"), LeaseTtl: long})
	if err != nil {
		t.Fatalf("inv claim with a 90m lease: %v", err)
	}
	_, err = c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "other", Key: "long", LeaseTtl: long})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "lease_ttl")
	_, err = c.dedup.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "inv", Key: "long",
		FencingToken: claim.GetFencingToken(), Result: []byte("12345")})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "result")
	_, err = c.dedup.Reject(ctx, &dedupv1.RejectRequest{Consumer: "inv", Key: "long",
		FencingToken: claim.GetFencingToken(), Reason: "NO", Detail: []byte("12345")})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "detail")

	deleted, err := c.admin.DeletePolicy(ctx, &dedupv1.DeletePolicyRequest{Consumer: "inv"})
	if err != nil || !deleted.GetPolicy().GetRequireDigest() {
		t.Fatalf("DeletePolicy = %v, %v; want the deleted policy", deleted, err)
	}
	if _, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "no-digest"}); err != nil {
		t.Fatalf("after DeletePolicy a claim without digest: %v", err)
	}
	_, err = c.admin.DeletePolicy(ctx, &dedupv1.DeletePolicyRequest{Consumer: "inv"})
	wantStatus(t, err, codes.NotFound, rpcerrors.ReasonPolicyNotFound, "")
}

func TestGetAndListPolicies(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	none, err := c.admin.GetPolicy(ctx, &dedupv1.GetPolicyRequest{Consumer: "inv"})
	if err != nil {
		t.Fatal(err)
	}
	eff := none.GetEffective()
	if none.GetPolicy() != nil || eff.GetConsumer() != "inv" || eff.GetMaxResultBytes() != int64(testDefaults.Limits.MaxResultBytes) ||
		eff.GetDefaultLeaseTtl().AsDuration() != testPolicy.DefaultLeaseTTL || eff.GetMaxLeaseTtl().AsDuration() != time.Hour {
		t.Fatalf("GetPolicy without a policy = %v, want only the defaults in effect", none)
	}
	_, err = c.admin.GetPolicy(ctx, &dedupv1.GetPolicyRequest{})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "consumer")

	c.setPolicy(t, &dedupv1.Policy{Consumer: "web", RejectedTtl: durationpb.New(time.Minute)})
	c.setPolicy(t, &dedupv1.Policy{Consumer: "inv", RequireDigest: true})
	got, err := c.admin.GetPolicy(ctx, &dedupv1.GetPolicyRequest{Consumer: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetPolicy().GetRejectedTtl().AsDuration() != time.Minute || got.GetPolicy().GetCompletedTtl() != nil ||
		got.GetEffective().GetCompletedTtl().AsDuration() != testPolicy.CompletedTTL {
		t.Fatalf("GetPolicy = %v, want the stored field set, unset fields unset, and defaults in effect", got)
	}
	list, err := c.admin.ListPolicies(ctx, &dedupv1.ListPoliciesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetPolicies()) != 2 || list.GetPolicies()[0].GetConsumer() != "inv" || list.GetPolicies()[1].GetConsumer() != "web" ||
		list.GetDefaults().GetCompletedTtl().AsDuration() != testPolicy.CompletedTTL || list.GetDefaults().GetConsumer() != "" {
		t.Fatalf("ListPolicies = %v, want inv and web in order, and the defaults", list)
	}
}

func TestDeleteRecordForgetsTheKey(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	c.finish(t, "inv", "k")
	_, err := c.admin.DeleteRecord(ctx, &dedupv1.DeleteRecordRequest{Consumer: "inv", Key: "missing"})
	wantStatus(t, err, codes.NotFound, rpcerrors.ReasonNotFound, "")
	_, err = c.admin.DeleteRecord(ctx, &dedupv1.DeleteRecordRequest{Consumer: "inv"})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "key")

	deleted, err := c.admin.DeleteRecord(ctx, &dedupv1.DeleteRecordRequest{Consumer: "inv", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if deleted.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED || string(deleted.GetRecord().GetResult()) != "ok" {
		t.Fatalf("DeleteRecord = %v, want the completed record", deleted)
	}
	again, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "k", Digest: []byte("other")})
	if err != nil || again.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
		t.Fatalf("claim after delete = %v, %v; want ACQUIRED, the old digest forgotten", again, err)
	}
}

func TestStatsCountsByState(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	c.finish(t, "inv", "a")
	c.finish(t, "inv", "b")
	pending, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "p"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "web", Key: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.dedup.Reject(ctx, &dedupv1.RejectRequest{Consumer: "web", Key: "r", FencingToken: r.GetFencingToken(), Reason: "NO"}); err != nil {
		t.Fatal(err)
	}
	all, err := c.admin.Stats(ctx, &dedupv1.StatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.GetConsumers()) != 2 {
		t.Fatalf("Stats = %v, want inv and web", all)
	}
	inv, web := all.GetConsumers()[0], all.GetConsumers()[1]
	if inv.GetConsumer() != "inv" || inv.GetCompleted() != 2 || inv.GetPending() != 1 || inv.GetRejected() != 0 ||
		!inv.GetOldestPendingAt().AsTime().Equal(pending.GetRecord().GetUpdatedAt().AsTime()) {
		t.Fatalf("inv stats = %v, want 2 completed, 1 pending since its claim", inv)
	}
	if web.GetConsumer() != "web" || web.GetRejected() != 1 || web.GetPending() != 0 || web.GetOldestPendingAt() != nil {
		t.Fatalf("web stats = %v, want 1 rejected and no pending", web)
	}
	one, err := c.admin.Stats(ctx, &dedupv1.StatsRequest{Consumer: "web"})
	if err != nil || len(one.GetConsumers()) != 1 || one.GetConsumers()[0].GetConsumer() != "web" {
		t.Fatalf("Stats(web) = %v, %v", one, err)
	}
	_, err = c.admin.Stats(ctx, &dedupv1.StatsRequest{Consumer: "Web"})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "consumer")
}

// recvAll reads a purge stream to its end.
func recvAll(t *testing.T, stream grpc.ServerStreamingClient[dedupv1.PurgeResponse]) ([]int64, error) {
	t.Helper()
	var counts []int64
	for {
		msg, err := stream.Recv()
		if err != nil {
			return counts, err
		}
		counts = append(counts, msg.GetDeleted())
		if msg.GetDone() {
			return counts, nil
		}
	}
}

// commitThenFailStore stores each policy change, then reports the error a
// connection lost at COMMIT gives: the caller cannot tell that it landed.
type commitThenFailStore struct {
	store.Backend
	mu       sync.Mutex
	policies map[string]store.ConsumerPolicy
}

func (s *commitThenFailStore) GetPolicy(_ context.Context, consumer string) (store.ConsumerPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.policies[consumer]
	if !ok {
		return store.ConsumerPolicy{}, store.ErrNoPolicy
	}
	return p, nil
}

func (s *commitThenFailStore) PutPolicy(_ context.Context, p store.ConsumerPolicy) (store.ConsumerPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies[p.Consumer] = p
	return store.ConsumerPolicy{}, store.ErrUnavailable
}

func (s *commitThenFailStore) DeletePolicy(_ context.Context, consumer string) (store.ConsumerPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.policies, consumer)
	return store.ConsumerPolicy{}, store.ErrUnavailable
}

func (s *commitThenFailStore) Stats(context.Context, string) ([]store.ConsumerStats, error) {
	return nil, nil
}

// TestFailedPolicyWriteStillInvalidatesTheCache: a SetPolicy or
// DeletePolicy that fails may have landed, so this server's next call
// reads the store rather than its cached policy.
func TestFailedPolicyWriteStillInvalidatesTheCache(t *testing.T) {
	st := &commitThenFailStore{policies: map[string]store.ConsumerPolicy{}}
	policies := policy.NewKeys(st, testDefaults, time.Hour)
	admin := NewAdminService(st, policies, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	completedTTL := func(t *testing.T, p *policy.Keys, consumer string) time.Duration {
		t.Helper()
		e, err := p.For(ctx, consumer)
		if err != nil {
			t.Fatal(err)
		}
		return e.Store.CompletedTTL
	}
	if got := completedTTL(t, policies, "inv"); got != testPolicy.CompletedTTL {
		t.Fatalf("no policy: %s", got)
	}

	_, err := admin.SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: &dedupv1.Policy{Consumer: "inv", CompletedTtl: durationpb.New(72 * time.Hour)}})
	wantStatus(t, err, codes.Unavailable, rpcerrors.ReasonStoreUnavailable, "")
	if got := completedTTL(t, policies, "inv"); got != 72*time.Hour {
		t.Fatalf("after a SetPolicy that failed but landed: %s, want the stored 72h", got)
	}

	_, err = admin.DeletePolicy(ctx, &dedupv1.DeletePolicyRequest{Consumer: "inv"})
	wantStatus(t, err, codes.Unavailable, rpcerrors.ReasonStoreUnavailable, "")
	if got := completedTTL(t, policies, "inv"); got != testPolicy.CompletedTTL {
		t.Fatalf("after a DeletePolicy that failed but landed: %s, want the default", got)
	}
}
