package api

import (
	"context"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// Park mode's admin calls, and the park fields of a stream policy.

// DropParked deletes a range of a stream's parked events.
func (s *StreamAdminService) DropParked(ctx context.Context, req *dedupv1.DropParkedRequest) (*dedupv1.DropParkedResponse, error) {
	var v validator
	v.streamTarget(req.GetConsumer(), req.GetStream())
	switch from, to := req.GetFromSequence(), req.GetToSequence(); {
	case from < 0:
		v.fail("from_sequence", "must not be negative, got %d", from)
	case to < 0 || (to != 0 && to < from):
		v.fail("to_sequence", "must be 0 (no bound) or at least from_sequence, got %d", to)
	}
	p, err := s.adminPolicy(ctx, &v, req.GetConsumer(), req.GetStream())
	if err != nil {
		return nil, err
	}
	r, err := s.store.DropParked(ctx, store.DropParkedParams{Consumer: req.GetConsumer(), Stream: req.GetStream(),
		From: req.GetFromSequence(), To: req.GetToSequence(), DryRun: req.GetDryRun(), Policy: p})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	if !req.GetDryRun() && r.Dropped > 0 {
		s.log.InfoContext(ctx, "parked events dropped", "consumer", req.GetConsumer(),
			"stream", clip.String(req.GetStream(), clip.MaxLogged), "dropped", r.Dropped)
	}
	return &dedupv1.DropParkedResponse{Stream: StreamToProto(r.Stream), Dropped: r.Dropped}, nil
}

// SkipGap gives up on the missing sequences before a stream's lowest
// parked event.
func (s *StreamAdminService) SkipGap(ctx context.Context, req *dedupv1.SkipGapRequest) (*dedupv1.SkipGapResponse, error) {
	var v validator
	v.streamTarget(req.GetConsumer(), req.GetStream())
	p, err := s.adminPolicy(ctx, &v, req.GetConsumer(), req.GetStream())
	if err != nil {
		return nil, err
	}
	r, err := s.store.SkipGap(ctx, store.SkipGapParams{Consumer: req.GetConsumer(), Stream: req.GetStream(),
		Cause: store.SkipByAdmin, DryRun: req.GetDryRun(), Policy: p})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	if !req.GetDryRun() {
		s.log.InfoContext(ctx, "stream gap skipped", "consumer", req.GetConsumer(),
			"stream", clip.String(req.GetStream(), clip.MaxLogged), "from", r.Skipped.From, "to", r.Skipped.To)
	}
	return &dedupv1.SkipGapResponse{Stream: StreamToProto(r.Stream), Skipped: recordpb.SkippedRangeFromStore(&r.Skipped)}, nil
}

// adminPolicy checks v and resolves the consumer's stream policy.
func (s *StreamAdminService) adminPolicy(ctx context.Context, v *validator, consumer, stream string) (store.StreamPolicy, error) {
	if err := v.result(); err != nil {
		return store.StreamPolicy{}, s.fail(ctx, err, consumer, stream)
	}
	p, err := s.streams.For(ctx, consumer)
	if err != nil {
		return store.StreamPolicy{}, s.fail(ctx, err, consumer, stream)
	}
	return p.Policy, nil
}

// parkPolicy reads a policy's park fields into p.
func (v *validator) parkPolicy(pp *dedupv1.StreamPolicy, p *store.ConsumerStreamPolicy) {
	if n := pp.GetMaxParked(); n < 0 || n > MaxParkedCeiling {
		v.fail("policy.max_parked", "must be between 0 (the server default) and %d, got %d", MaxParkedCeiling, n)
	}
	p.MaxParked = pp.GetMaxParked()
	if pp.GetGapTimeout() != nil {
		d, ok := v.duration("policy.gap_timeout", pp.GetGapTimeout())
		if ok && (d < MinGapTimeout || d > MaxTTLCeiling) {
			v.fail("policy.gap_timeout", "must be between %s and ten years, got %s", MinGapTimeout, d)
		}
		p.GapTimeout = d
	}
	switch a := pp.GetOnGapTimeout(); a {
	case dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_UNSPECIFIED:
	case dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_HOLD:
		p.OnGapTimeout = store.GapHold
	case dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_SKIP:
		p.OnGapTimeout = store.GapSkip
	default:
		v.fail("policy.on_gap_timeout", "holds %v, which is not a gap timeout action", a)
	}
}

var gapActionToProto = map[store.GapAction]dedupv1.GapTimeoutAction{
	store.GapHold: dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_HOLD,
	store.GapSkip: dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_SKIP,
}

// parkPolicyToProto sets pp's park fields from p.
func parkPolicyToProto(p store.ConsumerStreamPolicy, pp *dedupv1.StreamPolicy) {
	pp.MaxParked = p.MaxParked
	pp.OnGapTimeout = gapActionToProto[p.OnGapTimeout]
	if p.GapTimeout > 0 {
		pp.GapTimeout = durationpb.New(p.GapTimeout)
	}
}
