package api

import (
	"context"
	"strconv"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// Park mode's handlers on StreamService: the bounds of a park claim,
// ClaimParked, ListParked and the parked summary of GetStream.

// DefaultMaxParkPayloadBytes is the largest park payload when the server
// is not told otherwise (--max-park-payload-bytes); MaxParkPayloadCeiling
// is the most it may be told, so that a hand-out (a payload and one small
// stream) always fits one reply.
const (
	DefaultMaxParkPayloadBytes = 256 << 10
	MaxParkPayloadCeiling      = 1 << 20
	// MaxParkedCeiling is the most a stream policy's max_parked may be.
	MaxParkedCeiling = 100_000
	// MinGapTimeout is the shortest gap_timeout a policy may set: the
	// reaper checks gaps once a pass, so less would promise what it cannot
	// keep.
	MinGapTimeout = time.Second
)

// parkLimits are the server's park bounds in l, defaults filled in.
func parkLimits(l policy.Limits) policy.Limits {
	if l.MaxParkPayloadBytes <= 0 {
		l.MaxParkPayloadBytes = DefaultMaxParkPayloadBytes
	}
	return l
}

// parkPayload checks a claim's payload against the server's bound.
func (v *validator) parkPayload(req *dedupv1.ClaimStreamRequest, l policy.Limits) {
	if n := len(req.GetPayload()); n > l.MaxParkPayloadBytes {
		v.fail("payload", "is %d bytes, more than the maximum of %d (--max-park-payload-bytes)", n, l.MaxParkPayloadBytes)
	}
}

// parkedSummary is GetStream's summary of st's parked events; nil when it
// holds none, without a second read.
func (s *StreamService) parkedSummary(ctx context.Context, st store.Stream) (*dedupv1.ParkedSummary, error) {
	if st.Parked == 0 {
		return nil, nil
	}
	sum, err := s.store.GetParkedSummary(ctx, st.Consumer, st.Stream)
	if err != nil {
		return nil, err
	}
	return recordpb.ParkedSummaryFromStore(sum, time.Now()), nil
}

// ClaimParked hands a ready parked event to a pickup worker.
func (s *StreamService) ClaimParked(ctx context.Context, req *dedupv1.ClaimParkedRequest) (*dedupv1.ClaimParkedResponse, error) {
	var v validator
	v.consumer(req.GetConsumer())
	if req.GetStream() != "" {
		v.streamID(req.GetStream())
	}
	lease := v.leaseTTL(req.GetLeaseTtl(), MaxTTLCeiling)
	v.text("owner", req.GetOwner(), MaxOwnerBytes)
	policy, err := s.policy(ctx, &v, req.GetConsumer(), lease)
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	r, err := s.store.ClaimParked(ctx, store.ClaimParkedParams{Consumer: req.GetConsumer(), Stream: req.GetStream(),
		LeaseTTL: lease, Owner: req.GetOwner(), Policy: policy})
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	if r.Event == nil {
		return &dedupv1.ClaimParkedResponse{}, nil
	}
	return &dedupv1.ClaimParkedResponse{Event: HandedOutToProto(r.Event), Stream: StreamToProto(r.Stream)}, nil
}

// ListParked pages through one stream's parked events, payloads left out.
func (s *StreamService) ListParked(ctx context.Context, req *dedupv1.ListParkedRequest) (*dedupv1.ListParkedResponse, error) {
	var v validator
	v.streamTarget(req.GetConsumer(), req.GetStream())
	p := store.ListParkedParams{Consumer: req.GetConsumer(), Stream: req.GetStream(), Limit: DefaultPageSize}
	switch size := req.GetPageSize(); {
	case size < 0:
		v.fail("page_size", "must not be negative, got %d", size)
	case size > 0:
		p.Limit = min(int(size), MaxPageSize)
	}
	filter := parkedFilterHash(req)
	if tok := req.GetPageToken(); tok != "" {
		t, ok := decodePageToken(tok)
		after, err := strconv.ParseInt(t.AfterKey, 10, 64)
		switch {
		case !ok || err != nil || after < 0:
			v.fail("page_token", "is not a token this server issued")
		case t.Filter != filter:
			v.fail("page_token", "was issued for another stream; pass the same stream as the first page, or no token")
		default:
			p.AfterSequence = after
		}
	}
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	limit := p.Limit
	p.Limit++ // one more tells whether there is a next page
	evs, err := s.store.ListParked(ctx, p)
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), req.GetStream())
	}
	resp := &dedupv1.ListParkedResponse{}
	if len(evs) > limit {
		evs = evs[:limit]
		resp.NextPageToken = pageToken{AfterKey: strconv.FormatInt(evs[limit-1].Sequence, 10), Filter: filter}.encode()
	}
	var inFlight int64
	if len(evs) > 0 {
		if st, err := s.store.GetStream(ctx, req.GetConsumer(), req.GetStream()); err == nil {
			inFlight = st.InFlight
		}
	}
	resp.Events = make([]*dedupv1.ParkedEvent, len(evs))
	for i, ev := range evs {
		resp.Events[i] = recordpb.ParkedEventFromStore(ev, ev.Sequence == inFlight)
	}
	return resp, nil
}
