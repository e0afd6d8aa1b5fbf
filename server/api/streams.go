package api

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store"
)

// StreamService implements dedupv1.StreamServiceServer on a StreamStore:
// the same validate, resolve policy, call the store, answer steps as
// DedupService, for events with sequence numbers.
type StreamService struct {
	dedupv1.UnimplementedStreamServiceServer
	store   store.StreamStore
	streams *policy.Streams
	log     *slog.Logger
	waits   *claimwait.Registry // see WaitWith
}

// NewStreamService returns the service on st; streams resolves each
// consumer's stream policy.
func NewStreamService(st store.StreamStore, streams *policy.Streams, log *slog.Logger) *StreamService {
	return &StreamService{store: st, streams: streams, log: log}
}

// RegisterStreams registers the stream services on s with the lenient
// request decoding of Register.
func RegisterStreams(s grpc.ServiceRegistrar, svc dedupv1.StreamServiceServer, admin dedupv1.StreamAdminServiceServer) {
	registerLeniently(s, dedupv1.StreamService_ServiceDesc, svc)
	registerLeniently(s, dedupv1.StreamAdminService_ServiceDesc, admin)
}

func (s *StreamService) fail(ctx context.Context, err error, consumer, stream string) error {
	return failWith(ctx, s.log, err, streamCall(consumer, stream))
}

// policy checks the fields that do not depend on the policy, then resolves
// the consumer's key policy (lease bounds) and stream policy.
func (s *StreamService) policy(ctx context.Context, v *validator, consumer string, lease time.Duration) (store.StreamPolicy, error) {
	if err := v.result(); err != nil {
		return store.StreamPolicy{}, err
	}
	p, err := s.streams.For(ctx, consumer)
	if err != nil {
		return store.StreamPolicy{}, err
	}
	if lease > p.MaxLeaseTTL {
		v.fail("lease_ttl", "is %s, more than the maximum of %s", lease, p.MaxLeaseTTL)
	}
	return p.Policy, v.result()
}

func (v *validator) streamID(s string) {
	if s == "" {
		v.fail("stream", "is required")
		return
	}
	v.text("stream", s, MaxKeyBytes)
}

func (v *validator) sequence(n int64) {
	if n < 1 {
		v.fail("sequence", "must be at least 1, got %d", n)
	}
}

// streamTarget checks the fields every stream write names.
func (v *validator) streamTarget(consumer, stream string) {
	v.consumer(consumer)
	v.streamID(stream)
}

// held checks the fields of a call by the holder of a claim.
func (v *validator) held(consumer, stream string, seq, token int64) {
	v.streamTarget(consumer, stream)
	v.sequence(seq)
	v.fencingToken(token)
}

func (s *StreamService) ClaimStream(ctx context.Context, req *dedupv1.ClaimStreamRequest) (*dedupv1.ClaimStreamResponse, error) {
	var v validator
	v.streamTarget(req.GetConsumer(), req.GetStream())
	v.sequence(req.GetSequence())
	mode := v.streamMode("mode", req.GetMode())
	v.bytes("digest", req.GetDigest(), MaxDigestBytes)
	lease := v.leaseTTL(req.GetLeaseTtl(), MaxTTLCeiling)
	v.text("owner", req.GetOwner(), MaxOwnerBytes)
	wait := v.wait(req.GetWait())
	v.parkPayload(req, parkLimits(s.streams.Defaults().Limits))
	policy, err := s.policy(ctx, &v, req.GetConsumer(), lease)
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	params := store.ClaimStreamParams{
		Consumer: req.GetConsumer(), Stream: req.GetStream(), Sequence: req.GetSequence(),
		Mode: mode, Digest: req.GetDigest(), LeaseTTL: lease, Owner: req.GetOwner(),
		Park: req.GetPark(), Payload: req.GetPayload(), Policy: policy,
	}
	res, err := s.store.ClaimStream(ctx, params)
	if err == nil {
		res, err = s.awaitStream(ctx, req, params, wait, res)
	}
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	return streamClaimResponse(res), nil
}

// asHolder runs a call of a claim's holder: the holder's fields and the
// call's own checks (which return the lease it asks for, or 0), the policy,
// then write; the stream it returns, or the caller's error.
func (s *StreamService) asHolder(ctx context.Context, consumer, stream string, seq, token int64,
	checks func(*validator) time.Duration, write func(store.StreamPolicy) (store.Stream, error)) (*dedupv1.Stream, error) {
	var v validator
	v.held(consumer, stream, seq, token)
	lease := checks(&v)
	policy, err := s.policy(ctx, &v, consumer, lease)
	if err != nil {
		return nil, s.fail(ctx, err, consumer, stream)
	}
	st, err := write(policy)
	if err != nil {
		return nil, s.fail(ctx, err, consumer, stream)
	}
	return StreamToProto(st), nil
}

func noChecks(*validator) time.Duration { return 0 }

func (s *StreamService) CompleteStream(ctx context.Context, req *dedupv1.CompleteStreamRequest) (*dedupv1.CompleteStreamResponse, error) {
	var (
		nextLease time.Duration
		next      *store.HandedOut
	)
	checks := func(v *validator) time.Duration {
		nextLease = v.leaseTTLOf("next_lease_ttl", req.GetNextLeaseTtl(), MaxTTLCeiling)
		return nextLease
	}
	st, err := s.asHolder(ctx, req.GetConsumer(), req.GetStream(), req.GetSequence(), req.GetFencingToken(), checks,
		func(p store.StreamPolicy) (store.Stream, error) {
			r, err := s.store.CompleteStream(ctx, store.CompleteStreamParams{Consumer: req.GetConsumer(),
				Stream: req.GetStream(), Sequence: req.GetSequence(), FencingToken: req.GetFencingToken(),
				NextLeaseTTL: nextLease, Policy: p})
			next = r.Next
			return r.Stream, err
		})
	if err != nil {
		return nil, err
	}
	return &dedupv1.CompleteStreamResponse{Stream: st, Next: HandedOutToProto(next)}, nil
}

func (s *StreamService) RejectStream(ctx context.Context, req *dedupv1.RejectStreamRequest) (*dedupv1.RejectStreamResponse, error) {
	var (
		nextLease time.Duration
		next      *store.HandedOut
	)
	checks := func(v *validator) time.Duration {
		v.text("reason", req.GetReason(), MaxReasonBytes)
		v.text("message", req.GetMessage(), MaxStreamMessageBytes)
		v.bytes("detail", req.GetDetail(), MaxStreamDetailBytes)
		nextLease = v.leaseTTLOf("next_lease_ttl", req.GetNextLeaseTtl(), MaxTTLCeiling)
		return nextLease
	}
	st, err := s.asHolder(ctx, req.GetConsumer(), req.GetStream(), req.GetSequence(), req.GetFencingToken(), checks,
		func(p store.StreamPolicy) (store.Stream, error) {
			r, err := s.store.RejectStream(ctx, store.RejectStreamParams{Consumer: req.GetConsumer(),
				Stream: req.GetStream(), Sequence: req.GetSequence(), FencingToken: req.GetFencingToken(),
				Rejection:    store.Rejection{Reason: req.GetReason(), Message: req.GetMessage(), Detail: req.GetDetail()},
				NextLeaseTTL: nextLease, Policy: p})
			next = r.Next
			return r.Stream, err
		})
	if err != nil {
		return nil, err
	}
	return &dedupv1.RejectStreamResponse{Stream: st, Next: HandedOutToProto(next)}, nil
}

func (s *StreamService) ReleaseStream(ctx context.Context, req *dedupv1.ReleaseStreamRequest) (*dedupv1.ReleaseStreamResponse, error) {
	st, err := s.asHolder(ctx, req.GetConsumer(), req.GetStream(), req.GetSequence(), req.GetFencingToken(), noChecks,
		func(p store.StreamPolicy) (store.Stream, error) {
			return s.store.ReleaseStream(ctx, store.ReleaseStreamParams{Consumer: req.GetConsumer(),
				Stream: req.GetStream(), Sequence: req.GetSequence(), FencingToken: req.GetFencingToken(), Policy: p})
		})
	if err != nil {
		return nil, err
	}
	return &dedupv1.ReleaseStreamResponse{Stream: st}, nil
}

func (s *StreamService) ExtendStreamLease(ctx context.Context, req *dedupv1.ExtendStreamLeaseRequest) (*dedupv1.ExtendStreamLeaseResponse, error) {
	var lease time.Duration
	checks := func(v *validator) time.Duration {
		lease = v.leaseTTL(req.GetLeaseTtl(), MaxTTLCeiling)
		return lease
	}
	st, err := s.asHolder(ctx, req.GetConsumer(), req.GetStream(), req.GetSequence(), req.GetFencingToken(), checks,
		func(p store.StreamPolicy) (store.Stream, error) {
			return s.store.ExtendStreamLease(ctx, store.ExtendStreamLeaseParams{Consumer: req.GetConsumer(),
				Stream: req.GetStream(), Sequence: req.GetSequence(), FencingToken: req.GetFencingToken(),
				LeaseTTL: lease, Policy: p})
		})
	if err != nil {
		return nil, err
	}
	return &dedupv1.ExtendStreamLeaseResponse{Stream: st}, nil
}

func (s *StreamService) GetStream(ctx context.Context, req *dedupv1.GetStreamRequest) (*dedupv1.GetStreamResponse, error) {
	var v validator
	v.streamTarget(req.GetConsumer(), req.GetStream())
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	st, err := s.store.GetStream(ctx, req.GetConsumer(), req.GetStream())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	resp := &dedupv1.GetStreamResponse{Stream: StreamToProto(st)}
	if resp.Parked, err = s.parkedSummary(ctx, st); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	return resp, nil
}

// ListStreams pages through a consumer's streams, one keyset query per page.
func (s *StreamService) ListStreams(ctx context.Context, req *dedupv1.ListStreamsRequest) (*dedupv1.ListStreamsResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	p := store.ListStreamsParams{Consumer: req.GetConsumer(), LeaseExpired: req.GetLeaseExpired(), Limit: DefaultPageSize}
	switch size := req.GetPageSize(); {
	case size < 0:
		v.fail("page_size", "must not be negative, got %d", size)
	case size > 0:
		p.Limit = min(int(size), MaxPageSize)
	}
	filter := streamFilterHash(req)
	if tok := req.GetPageToken(); tok != "" {
		t, ok := decodePageToken(tok)
		switch {
		case !ok:
			v.fail("page_token", "is not a token this server issued")
		case t.Filter != filter:
			v.fail("page_token", "was issued for other filters; pass the same filters as the first page, or no token")
		default:
			p.AfterStream = t.AfterKey
		}
	}
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	limit := p.Limit
	p.Limit++ // one more tells whether there is a next page
	streams, err := s.store.ListStreams(ctx, p)
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	resp := &dedupv1.ListStreamsResponse{}
	if len(streams) > limit {
		streams = streams[:limit]
		resp.NextPageToken = pageToken{AfterKey: streams[limit-1].Stream, Filter: filter}.encode()
	}
	resp.Streams = make([]*dedupv1.Stream, len(streams))
	for i, st := range streams {
		resp.Streams[i] = StreamToProto(st)
	}
	return resp, nil
}

// MaxStreamMessageBytes and MaxStreamDetailBytes bound a stream
// rejection. A stream record is meant to stay small (it is kept for weeks),
// and a page of MaxPageSize streams must fit in a 4 MiB reply: 1000 x
// (stream 512 + owner 256 + digest 64 + reason 128 + message 512 + detail
// 1024 + ~200 of the rest) is under 2.7 MB.
const (
	MaxStreamMessageBytes = 512
	MaxStreamDetailBytes  = 1024
)
