package api

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// StreamAdminService implements dedupv1.StreamAdminServiceServer: moving a
// stream's high-water mark by hand, and per-consumer stream policies.
type StreamAdminService struct {
	dedupv1.UnimplementedStreamAdminServiceServer
	store   store.StreamStore
	streams *policy.Streams
	log     *slog.Logger
}

// NewStreamAdminService returns the service on st. streams must be the
// process's resolver (policy.NewResolvers), the one the StreamService and
// the gap watch of this server use, so that a policy change made here is
// seen by their next call and pass.
func NewStreamAdminService(st store.StreamStore, streams *policy.Streams, log *slog.Logger) *StreamAdminService {
	return &StreamAdminService{store: st, streams: streams, log: log}
}

func (s *StreamAdminService) fail(ctx context.Context, err error, consumer, stream string) error {
	return failWith(ctx, s.log, err, streamCall(consumer, stream))
}

// ResetStream sets a stream's mark. The previous stream is read first, not
// in one step with the write: a claim between the two shows in neither.
func (s *StreamAdminService) ResetStream(ctx context.Context, req *dedupv1.ResetStreamRequest) (*dedupv1.ResetStreamResponse, error) {
	var v validator
	v.streamTarget(req.GetConsumer(), req.GetStream())
	if req.GetHighWater() < 0 {
		v.fail("high_water", "must not be negative, got %d", req.GetHighWater())
	}
	mode := v.streamMode("mode", req.GetMode())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	p, err := s.streams.For(ctx, req.GetConsumer())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	resp := &dedupv1.ResetStreamResponse{}
	prev, err := s.store.GetStream(ctx, req.GetConsumer(), req.GetStream())
	switch {
	case err == nil:
		resp.Previous = StreamToProto(prev)
	case !errors.Is(err, store.ErrNotFound):
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	st, err := s.store.ResetStream(ctx, store.ResetStreamParams{Consumer: req.GetConsumer(),
		Stream: req.GetStream(), HighWater: req.GetHighWater(), Mode: mode, DryRun: req.GetDryRun(), Policy: p.Policy})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	if !req.GetDryRun() {
		s.log.InfoContext(ctx, "stream reset", "consumer", req.GetConsumer(), "stream", clip.String(req.GetStream(), clip.MaxLogged),
			"high_water", st.HighWater, "previous", prev.HighWater)
	}
	resp.Stream = StreamToProto(st)
	return resp, nil
}

func (s *StreamAdminService) SetStreamPolicy(ctx context.Context, req *dedupv1.SetStreamPolicyRequest) (*dedupv1.SetStreamPolicyResponse, error) {
	pp := req.GetPolicy()
	var v validator
	v.consumer(pp.GetConsumer())
	p := store.ConsumerStreamPolicy{Consumer: pp.GetConsumer(),
		Mode: v.streamMode("policy.mode", pp.GetMode()), Start: v.streamStart("policy.start", pp.GetStart())}
	p.StreamTTL = v.policyTTL("policy.stream_ttl", pp.GetStreamTtl())
	v.parkPolicy(pp, &p)
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, pp.GetConsumer(), "")
	}
	stored, err := s.store.PutStreamPolicy(ctx, p)
	s.streams.Invalidate(p.Consumer) // also on failure: the write may have landed
	if err != nil {
		return nil, s.fail(ctx, err, pp.GetConsumer(), "")
	}
	return &dedupv1.SetStreamPolicyResponse{Policy: streamPolicyToProto(stored)}, nil
}

func (s *StreamAdminService) GetStreamPolicy(ctx context.Context, req *dedupv1.GetStreamPolicyRequest) (*dedupv1.GetStreamPolicyResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	p, err := s.store.GetStreamPolicy(ctx, req.GetConsumer())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	return &dedupv1.GetStreamPolicyResponse{Policy: streamPolicyToProto(p)}, nil
}

func (s *StreamAdminService) DeleteStreamPolicy(ctx context.Context, req *dedupv1.DeleteStreamPolicyRequest) (*dedupv1.DeleteStreamPolicyResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	p, err := s.store.DeleteStreamPolicy(ctx, req.GetConsumer())
	s.streams.Invalidate(req.GetConsumer())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	return &dedupv1.DeleteStreamPolicyResponse{Policy: streamPolicyToProto(p)}, nil
}

func streamPolicyToProto(p store.ConsumerStreamPolicy) *dedupv1.StreamPolicy {
	pp := &dedupv1.StreamPolicy{Consumer: p.Consumer, Mode: recordpb.StreamModeToProto(p.Mode),
		Start: streamStartToProto[p.Start], UpdatedAt: recordpb.Timestamp(p.UpdatedAt)}
	if p.StreamTTL > 0 {
		pp.StreamTtl = durationpb.New(p.StreamTTL)
	}
	parkPolicyToProto(p, pp)
	return pp
}
