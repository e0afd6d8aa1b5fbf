package api

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

var testPolicy = store.Policy{
	DefaultLeaseTTL: 30 * time.Second,
	CompletedTTL:    time.Hour,
	RejectedTTL:     time.Hour,
	ReleasedTTL:     time.Hour,
}

// newClient serves the API over an in-memory connection on a real embedded
// store, so the tests see exactly what a gRPC caller sees.
func newClient(t *testing.T) dedupv1.DedupServiceClient {
	t.Helper()
	return dedupv1.NewDedupServiceClient(newConn(t))
}

// testDefaults are the server defaults of the tests' services.
var testDefaults = policy.Defaults{Policy: testPolicy, Limits: policy.Limits{MaxLeaseTTL: time.Hour, MaxResultBytes: 1 << 10}}

func newConn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	return newServer(t, 0)
}

// newServer serves DedupService and AdminService, sharing one policy
// resolver with the given cache bound as dedupd does, on a fresh embedded
// store.
func newServer(t *testing.T, policyCacheTTL time.Duration) *grpc.ClientConn {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return serve(t, st, policyCacheTTL)
}

// serve serves both services on st.
func serve(t *testing.T, st store.Backend, policyCacheTTL time.Duration) *grpc.ClientConn {
	t.Helper()
	return serveWith(t, st, policyCacheTTL, testDefaults)
}

// serveWith serves both services on st with the given server defaults, to
// a client left at grpc-go's defaults (a 4 MiB receive limit).
func serveWith(t *testing.T, st store.Backend, policyCacheTTL time.Duration, defaults policy.Defaults) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer()
	log := slog.New(slog.DiscardHandler)
	policies := policy.NewKeys(st, defaults, policyCacheTTL)
	Register(srv, NewDedupService(st, policies, log))
	RegisterAdmin(srv, NewAdminService(st, policies, log))
	return grpctest.ServeInMemory(t, srv)
}

func TestClaimResponseFields(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	req := &dedupv1.ClaimRequest{Consumer: "orders", Key: "o-1", Digest: []byte{1, 2}, Owner: "worker-a",
		LeaseTtl: durationpb.New(time.Minute)}
	first, err := c.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	rec := first.GetRecord()
	if first.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED || first.GetFencingToken() != 1 || first.GetRetryAfter() != nil {
		t.Fatalf("first claim = %v, want ACQUIRED with token 1 and no retry_after", first)
	}
	if rec.GetState() != dedupv1.State_STATE_PENDING || rec.GetOwner() != "worker-a" || rec.GetAttempts() != 1 ||
		!bytes.Equal(rec.GetDigest(), []byte{1, 2}) {
		t.Fatalf("record = %v", rec)
	}
	lease := rec.GetLeaseExpiresAt().AsTime().Sub(rec.GetCreatedAt().AsTime())
	if lease != time.Minute {
		t.Fatalf("lease = %s, want the requested 1m", lease)
	}
	if got := rec.GetExpiresAt().AsTime().Sub(rec.GetLeaseExpiresAt().AsTime()); got != testPolicy.ReleasedTTL {
		t.Fatalf("pending record kept %s after its lease, want the released TTL %s", got, testPolicy.ReleasedTTL)
	}

	second, err := c.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if second.GetOutcome() != dedupv1.Outcome_OUTCOME_IN_PROGRESS || second.GetFencingToken() != 0 {
		t.Fatalf("second claim = %v, want IN_PROGRESS without a token", second)
	}
	if ra := second.GetRetryAfter().AsDuration(); ra <= 0 || ra > time.Minute {
		t.Fatalf("retry_after = %s, want within the 1m lease", ra)
	}
}

func TestCompleteThenReplayOverGRPC(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	claim := &dedupv1.ClaimRequest{Consumer: "orders", Key: "o-2"}
	got, err := c.Claim(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: "o-2",
		FencingToken: got.GetFencingToken(), Result: []byte("shipped\x00")})
	if err != nil {
		t.Fatal(err)
	}
	if done.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED {
		t.Fatalf("complete = %v", done)
	}
	wantExpiry := done.GetRecord().GetUpdatedAt().AsTime().Add(testPolicy.CompletedTTL)
	if !done.GetRecord().GetExpiresAt().AsTime().Equal(wantExpiry) {
		t.Fatalf("expires_at = %v, want updated_at + completed TTL = %v", done.GetRecord().GetExpiresAt().AsTime(), wantExpiry)
	}
	replay, err := c.Claim(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if replay.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED || string(replay.GetRecord().GetResult()) != "shipped\x00" {
		t.Fatalf("replay = %v, want COMPLETED with the stored bytes", replay)
	}
	_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: "o-2",
		FencingToken: got.GetFencingToken(), Result: []byte("other")})
	if status.Code(err) != codes.FailedPrecondition || errorInfo(t, status.Convert(err)).GetReason() != rpcerrors.ReasonAlreadyFinished {
		t.Fatalf("second Complete with other bytes = %v, want ALREADY_FINISHED", err)
	}
}

func TestRejectionRoundTripsOverGRPC(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "stock", Key: "e-9"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Reject(ctx, &dedupv1.RejectRequest{Consumer: "stock", Key: "e-9", FencingToken: got.GetFencingToken(),
		Reason: "OUT_OF_STOCK", Message: "only 2 left", Detail: []byte{9}})
	if err != nil {
		t.Fatal(err)
	}
	lookup, err := c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "stock", Key: "e-9"})
	if err != nil {
		t.Fatal(err)
	}
	rj := lookup.GetRecord().GetRejection()
	if lookup.GetRecord().GetState() != dedupv1.State_STATE_REJECTED || rj.GetReason() != "OUT_OF_STOCK" ||
		rj.GetMessage() != "only 2 left" || !bytes.Equal(rj.GetDetail(), []byte{9}) || rj.GetRetryable() {
		t.Fatalf("lookup = %v", lookup)
	}
}

// TestFinishWithoutRecordSaysSo: Complete, Reject and ExtendLease of a key
// never claimed answer LEASE_LOST as before, and say in the message and
// the metadata that the key has no record; a stale holder's Complete of a
// key that has one does not.
func TestFinishWithoutRecordSaysSo(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	calls := map[string]func() error{
		"Complete": func() error {
			_, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: "never", FencingToken: 1})
			return err
		},
		"Reject": func() error {
			_, err := c.Reject(ctx, &dedupv1.RejectRequest{Consumer: "orders", Key: "never", FencingToken: 1, Reason: "r"})
			return err
		},
		"ExtendLease": func() error {
			_, err := c.ExtendLease(ctx, &dedupv1.ExtendLeaseRequest{Consumer: "orders", Key: "never", FencingToken: 1, LeaseTtl: durationpb.New(time.Minute)})
			return err
		},
		"stale Complete": func() error {
			got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "orders", Key: "held"})
			if err != nil {
				return err
			}
			_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: "held", FencingToken: got.GetFencingToken() + 1})
			return err
		},
	}
	for name, call := range calls {
		st := status.Convert(call())
		info := errorInfo(t, st)
		if st.Code() != codes.Aborted || info.GetReason() != rpcerrors.ReasonLeaseLost {
			t.Fatalf("%s: %v, want ABORTED LEASE_LOST", name, st)
		}
		wantNone := name != "stale Complete"
		if strings.Contains(st.Message(), "no record exists") != wantNone || (info.GetMetadata()["record"] == "none") != wantNone {
			t.Errorf("%s: message %q, metadata %v; want it to say no record exists: %v", name, st.Message(), info.GetMetadata(), wantNone)
		}
	}
}
