package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestParkOverTheWire: a gap parked from gRPC, handed back as next (with
// its payload, token and lease) by the completion that reaches it, the
// summary and listing of what waits, and the refusals with their reasons.
func TestParkOverTheWire(t *testing.T) {
	c, admin := newStreamClients(t)
	ctx := context.Background()
	claim := func(seq int64, park bool, payload string) (*dedupv1.ClaimStreamResponse, error) {
		return c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "order-42", Sequence: seq,
			Park: park, Payload: []byte(payload), Owner: "w"})
	}
	first, err := claim(1, true, "created")
	if err != nil || first.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED {
		t.Fatalf("claim 1 with park: %v, %v", first, err)
	}
	for _, seq := range []int64{3, 2} {
		r, err := claim(seq, true, map[int64]string{2: "paid", 3: "shipped"}[seq])
		if err != nil || r.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_PARKED || r.GetFencingToken() != 0 {
			t.Fatalf("park %d: %v, %v", seq, r, err)
		}
	}
	if r, err := claim(4, false, ""); err != nil || r.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_IN_PROGRESS {
		t.Fatalf("a claim past the mark without park, while 1 is leased: %v, %v", r, err)
	}
	got, err := c.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: "orders", Stream: "order-42"})
	if p := got.GetParked(); err != nil || p.GetCount() != 2 || p.GetLowest() != 2 || p.GetHighest() != 3 ||
		!p.GetGapOpen() || p.GetOldestParkedAt() == nil || got.GetStream().GetParked() != 2 {
		t.Fatalf("GetStream: %v, %v", got, err)
	}
	page, err := c.ListParked(ctx, &dedupv1.ListParkedRequest{Consumer: "orders", Stream: "order-42", PageSize: 1})
	if err != nil || len(page.GetEvents()) != 1 || page.GetEvents()[0].GetSequence() != 2 ||
		len(page.GetEvents()[0].GetPayload()) != 0 || page.GetEvents()[0].GetPayloadBytes() != 4 || page.GetNextPageToken() == "" {
		t.Fatalf("ListParked page 1: %v, %v", page, err)
	}
	page, err = c.ListParked(ctx, &dedupv1.ListParkedRequest{Consumer: "orders", Stream: "order-42", PageSize: 1,
		PageToken: page.GetNextPageToken()})
	if err != nil || len(page.GetEvents()) != 1 || page.GetEvents()[0].GetSequence() != 3 {
		t.Fatalf("ListParked page 2: %v, %v", page, err)
	}

	done, err := c.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: "orders", Stream: "order-42", Sequence: 1,
		FencingToken: first.GetFencingToken(), NextLeaseTtl: durationpb.New(time.Minute)})
	next := done.GetNext()
	if err != nil || next.GetSequence() != 2 || string(next.GetPayload()) != "paid" ||
		next.GetFencingToken() != first.GetFencingToken()+1 || next.GetLeaseExpiresAt() == nil {
		t.Fatalf("complete 1: %v, %v; want 2 handed back", done, err)
	}
	rej, err := c.RejectStream(ctx, &dedupv1.RejectStreamRequest{Consumer: "orders", Stream: "order-42", Sequence: 2,
		FencingToken: next.GetFencingToken(), Reason: "BAD"})
	if err != nil || rej.GetNext().GetSequence() != 3 || string(rej.GetNext().GetPayload()) != "shipped" {
		t.Fatalf("reject 2: %v, %v; want 3 handed back", rej, err)
	}
	none, err := c.ClaimParked(ctx, &dedupv1.ClaimParkedRequest{Consumer: "orders"})
	if err != nil || none.GetEvent() != nil {
		t.Fatalf("ClaimParked while 3 is leased: %v, %v", none, err)
	}
	_, err = admin.SkipGap(ctx, &dedupv1.SkipGapRequest{Consumer: "orders", Stream: "order-42"})
	if code, info, _ := streamErrorInfo(t, err); code != codes.FailedPrecondition || info.GetReason() != "NO_GAP" {
		t.Fatalf("SkipGap with no gap: %v %v", code, info)
	}
}

func TestParkRefusals(t *testing.T) {
	c, admin := newStreamClients(t)
	ctx := context.Background()
	if _, err := admin.SetStreamPolicy(ctx, &dedupv1.SetStreamPolicyRequest{Policy: &dedupv1.StreamPolicy{Consumer: "orders",
		MaxParked: 1, GapTimeout: durationpb.New(time.Minute), OnGapTimeout: dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_SKIP}}); err != nil {
		t.Fatal(err)
	}
	p, err := admin.GetStreamPolicy(ctx, &dedupv1.GetStreamPolicyRequest{Consumer: "orders"})
	if pp := p.GetPolicy(); err != nil || pp.GetMaxParked() != 1 || pp.GetGapTimeout().AsDuration() != time.Minute ||
		pp.GetOnGapTimeout() != dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_SKIP {
		t.Fatalf("policy %v, %v", p, err)
	}
	park := func(seq int64, payload []byte) error {
		_, err := c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "s", Sequence: seq, Park: true, Payload: payload})
		return err
	}
	if err := park(3, []byte("x")); err != nil {
		t.Fatal(err)
	}
	code, info, stream := streamErrorInfo(t, park(4, []byte("x")))
	if code != codes.ResourceExhausted || info.GetReason() != "PARK_FULL" || stream.GetParked() != 1 {
		t.Fatalf("past max_parked: %v %v %v", code, info, stream)
	}
	code, info, _ = streamErrorInfo(t, park(5, make([]byte, DefaultMaxParkPayloadBytes+1)))
	if code != codes.InvalidArgument || info.GetReason() != "INVALID_FIELD" || info.GetMetadata()["field"] != "payload" {
		t.Fatalf("payload too large: %v %v", code, info)
	}
	for name, pol := range map[string]*dedupv1.StreamPolicy{
		"policy.max_parked":     {Consumer: "orders", MaxParked: MaxParkedCeiling + 1},
		"policy.gap_timeout":    {Consumer: "orders", GapTimeout: durationpb.New(time.Millisecond)},
		"policy.on_gap_timeout": {Consumer: "orders", OnGapTimeout: 9},
	} {
		_, err := admin.SetStreamPolicy(ctx, &dedupv1.SetStreamPolicyRequest{Policy: pol})
		if code, info, _ := streamErrorInfo(t, err); code != codes.InvalidArgument || info.GetMetadata()["field"] != name {
			t.Errorf("%s: %v %v", name, code, info)
		}
	}
	_, err = c.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: "orders", Stream: "s", Sequence: 1, FencingToken: 1,
		NextLeaseTtl: durationpb.New(-time.Second)})
	if code, info, _ := streamErrorInfo(t, err); code != codes.InvalidArgument || info.GetMetadata()["field"] != "next_lease_ttl" {
		t.Fatalf("negative next_lease_ttl: %v %v", code, info)
	}
	dry, err := admin.DropParked(ctx, &dedupv1.DropParkedRequest{Consumer: "orders", Stream: "s", DryRun: true})
	if err != nil || dry.GetDropped() != 1 {
		t.Fatalf("dry-run drop: %v, %v", dry, err)
	}
	skip, err := admin.SkipGap(ctx, &dedupv1.SkipGapRequest{Consumer: "orders", Stream: "s", DryRun: true})
	if err != nil || skip.GetSkipped().GetFromSequence() != 1 || skip.GetSkipped().GetToSequence() != 2 ||
		skip.GetSkipped().GetCause() != dedupv1.SkipCause_SKIP_CAUSE_ADMIN {
		t.Fatalf("dry-run skip: %v, %v", skip, err)
	}
	if got, _ := c.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: "orders", Stream: "s"}); got.GetStream().GetHighWater() != 0 ||
		got.GetParked().GetCount() != 1 || !strings.Contains(got.String(), "parked") {
		t.Fatalf("dry runs changed the stream: %v", got)
	}
}
