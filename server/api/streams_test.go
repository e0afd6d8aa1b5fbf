package api

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// newStreamClients serves both stream services on a fresh embedded store.
func newStreamClients(t *testing.T) (dedupv1.StreamServiceClient, dedupv1.StreamAdminServiceClient) {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := grpc.NewServer()
	log := slog.New(slog.DiscardHandler)
	// A long cache: the policy changes in the tests go through this
	// server, which must see them at its next call.
	sp := policy.NewStreams(st, policy.NewKeys(st, testDefaults, time.Hour), 0, time.Hour)
	RegisterStreams(srv, NewStreamService(st, sp, log), NewStreamAdminService(st, sp, log))
	conn := grpctest.ServeInMemory(t, srv)
	return dedupv1.NewStreamServiceClient(conn), dedupv1.NewStreamAdminServiceClient(conn)
}

// streamErrorInfo returns the code, ErrorInfo and stream detail of err.
func streamErrorInfo(t *testing.T, err error) (codes.Code, *errdetails.ErrorInfo, *dedupv1.Stream) {
	t.Helper()
	st := status.Convert(err)
	var info *errdetails.ErrorInfo
	var stream *dedupv1.Stream
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *dedupv1.Stream:
			stream = d
		}
	}
	if info == nil {
		t.Fatalf("%v carries no ErrorInfo", err)
	}
	return st.Code(), info, stream
}

func TestStreamInOrderDuplicateAndGap(t *testing.T) {
	c, _ := newStreamClients(t)
	ctx := context.Background()
	claim := func(seq int64) (*dedupv1.ClaimStreamResponse, error) {
		return c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "order-42", Sequence: seq,
			LeaseTtl: durationpb.New(time.Minute), Owner: "w"})
	}
	first, err := claim(1)
	if err != nil || first.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED || first.GetFencingToken() != 1 {
		t.Fatalf("claim 1: %v, %v", first, err)
	}
	if ip, err := claim(1); err != nil || ip.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_IN_PROGRESS ||
		ip.GetRetryAfter().AsDuration() <= 0 || ip.GetFencingToken() != 0 {
		t.Fatalf("claim 1 again: %v, %v", ip, err)
	}
	done, err := c.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: "orders", Stream: "order-42",
		Sequence: 1, FencingToken: first.GetFencingToken()})
	if err != nil || done.GetStream().GetHighWater() != 1 || done.GetStream().GetLastOutcome() != dedupv1.State_STATE_COMPLETED {
		t.Fatalf("complete: %v, %v", done, err)
	}
	dup, err := claim(1)
	if err != nil || dup.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE || dup.GetStream().GetHighWater() != 1 {
		t.Fatalf("duplicate: %v, %v", dup, err)
	}
	_, err = claim(3)
	code, info, stream := streamErrorInfo(t, err)
	if code != codes.FailedPrecondition || info.GetReason() != "SEQUENCE_GAP" || info.GetMetadata()["expected_sequence"] != "2" ||
		stream.GetHighWater() != 1 {
		t.Fatalf("gap: %v %v %v", code, info, stream)
	}
}

func TestStreamErrorTable(t *testing.T) {
	c, admin := newStreamClients(t)
	ctx := context.Background()
	if _, err := admin.SetStreamPolicy(ctx, &dedupv1.SetStreamPolicyRequest{Policy: &dedupv1.StreamPolicy{
		Consumer: "fixed", Mode: dedupv1.StreamMode_STREAM_MODE_DENSE}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		call   func() error
		code   codes.Code
		reason string
		field  string
	}{
		{"sequence 0", func() error {
			_, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "s", Sequence: 0})
			return err
		}, codes.InvalidArgument, "INVALID_FIELD", "sequence"},
		{"no stream", func() error {
			_, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Sequence: 1})
			return err
		}, codes.InvalidArgument, "INVALID_FIELD", "stream"},
		{"unknown mode", func() error {
			_, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "s", Sequence: 1, Mode: 9})
			return err
		}, codes.InvalidArgument, "INVALID_FIELD", "mode"},
		{"long lease", func() error {
			_, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "s", Sequence: 1,
				LeaseTtl: durationpb.New(2 * time.Hour)})
			return err
		}, codes.InvalidArgument, "INVALID_FIELD", "lease_ttl"},
		{"long message", func() error {
			_, err := c.RejectStream(ctx, &dedupv1.RejectStreamRequest{Consumer: "orders", Stream: "s", Sequence: 1,
				FencingToken: 1, Message: string(make([]byte, MaxStreamMessageBytes+1))})
			return err
		}, codes.InvalidArgument, "INVALID_FIELD", "message"},
		{"mode against the policy", func() error {
			_, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "fixed", Stream: "s", Sequence: 1,
				Mode: dedupv1.StreamMode_STREAM_MODE_VERSIONS})
			return err
		}, codes.FailedPrecondition, "STREAM_MODE_MISMATCH", ""},
		{"complete without a claim", func() error {
			_, err := c.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: "orders", Stream: "s", Sequence: 1, FencingToken: 1})
			return err
		}, codes.Aborted, "LEASE_LOST", ""},
		{"get unknown", func() error {
			_, err := c.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: "orders", Stream: "nope"})
			return err
		}, codes.NotFound, "STREAM_NOT_FOUND", ""},
		{"negative reset", func() error {
			_, err := admin.ResetStream(ctx, &dedupv1.ResetStreamRequest{Consumer: "orders", Stream: "s", HighWater: -1})
			return err
		}, codes.InvalidArgument, "INVALID_FIELD", "high_water"},
		{"bad page token", func() error {
			_, err := c.ListStreams(ctx, &dedupv1.ListStreamsRequest{Consumer: "orders", PageToken: "x"})
			return err
		}, codes.InvalidArgument, "INVALID_FIELD", "page_token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, info, _ := streamErrorInfo(t, tc.call())
			if code != tc.code || info.GetReason() != tc.reason || info.GetMetadata()["field"] != tc.field {
				t.Fatalf("got %v %s field %q; want %v %s field %q", code, info.GetReason(), info.GetMetadata()["field"],
					tc.code, tc.reason, tc.field)
			}
		})
	}
	if _, err := c.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: "orders", Stream: "s"}); status.Code(err) != codes.NotFound {
		t.Fatalf("a refused call created the stream: %v", err)
	}
}

func TestStreamListAndReset(t *testing.T) {
	c, admin := newStreamClients(t)
	ctx := context.Background()
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		if _, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: s, Sequence: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	req := &dedupv1.ListStreamsRequest{Consumer: "orders", PageSize: 2}
	for {
		page, err := c.ListStreams(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.GetStreams() {
			seen = append(seen, s.GetStream())
		}
		if page.GetNextPageToken() == "" {
			break
		}
		req.PageToken = page.GetNextPageToken()
	}
	if len(seen) != 5 || seen[0] != "a" || seen[4] != "e" {
		t.Fatalf("listed %v", seen)
	}
	req = &dedupv1.ListStreamsRequest{Consumer: "orders", LeaseExpired: true, PageToken: req.GetPageToken()}
	if _, err := c.ListStreams(ctx, req); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a token with other filters: %v", err)
	}
	dry, err := admin.ResetStream(ctx, &dedupv1.ResetStreamRequest{Consumer: "orders", Stream: "a", HighWater: 7, DryRun: true})
	if err != nil || dry.GetStream().GetHighWater() != 7 || dry.GetPrevious().GetInFlight() != 1 {
		t.Fatalf("dry run: %v, %v", dry, err)
	}
	got, err := c.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: "orders", Stream: "a"})
	if err != nil || got.GetStream().GetHighWater() != 0 || got.GetStream().GetInFlight() != 1 {
		t.Fatalf("after the dry run: %v, %v", got, err)
	}
	if _, err := admin.ResetStream(ctx, &dedupv1.ResetStreamRequest{Consumer: "orders", Stream: "a", HighWater: 7}); err != nil {
		t.Fatal(err)
	}
	next, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "a", Sequence: 8})
	if err != nil || next.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED {
		t.Fatalf("claim after the reset: %v, %v", next, err)
	}
}

// A stream policy changed through this server applies to its next call,
// although the previous one was cached.
func TestStreamPolicyChangeAppliesAtOnce(t *testing.T) {
	c, admin := newStreamClients(t)
	ctx := context.Background()
	if _, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "flip", Stream: "a", Sequence: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetStreamPolicy(ctx, &dedupv1.SetStreamPolicyRequest{Policy: &dedupv1.StreamPolicy{
		Consumer: "flip", Mode: dedupv1.StreamMode_STREAM_MODE_VERSIONS}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "flip", Stream: "b", Sequence: 7,
		Mode: dedupv1.StreamMode_STREAM_MODE_DENSE})
	if _, info, _ := streamErrorInfo(t, err); info.GetReason() != "STREAM_MODE_MISMATCH" {
		t.Fatalf("claim against the new policy: %v", err)
	}
	resp, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "flip", Stream: "b", Sequence: 7})
	if err != nil || resp.GetStream().GetMode() != dedupv1.StreamMode_STREAM_MODE_VERSIONS {
		t.Fatalf("a new stream under the new policy: %v, %v", resp, err)
	}
}
