package api

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// StreamToProto converts a stored stream to its API form.
func StreamToProto(st store.Stream) *dedupv1.Stream { return recordpb.StreamFromStore(st) }

var streamOutcomeToProto = map[store.StreamOutcome]dedupv1.StreamOutcome{
	store.StreamAcquired:   dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED,
	store.StreamInProgress: dedupv1.StreamOutcome_STREAM_OUTCOME_IN_PROGRESS,
	store.StreamDuplicate:  dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE,
	store.StreamParked:     dedupv1.StreamOutcome_STREAM_OUTCOME_PARKED,
}

func streamClaimResponse(res store.StreamClaimResult) *dedupv1.ClaimStreamResponse {
	resp := &dedupv1.ClaimStreamResponse{Outcome: streamOutcomeToProto[res.Outcome], Stream: StreamToProto(res.Stream)}
	switch res.Outcome {
	case store.StreamAcquired:
		resp.FencingToken = res.Stream.FencingToken
	case store.StreamInProgress:
		resp.RetryAfter = durationpb.New(res.RetryAfter)
	}
	return resp
}

// streamFilterHash identifies a ListStreams request's filters for its page
// tokens (see filterHash).
func streamFilterHash(req *dedupv1.ListStreamsRequest) string {
	sum := sha256.Sum256([]byte(req.GetConsumer() + "\x00streams\x00" + strconv.FormatBool(req.GetLeaseExpired())))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// HandedOutToProto converts a parked event handed out to the caller; nil
// stays nil.
func HandedOutToProto(h *store.HandedOut) *dedupv1.ParkedEvent { return recordpb.HandedOutFromStore(h) }

// parkedFilterHash ties a ListParked page token to its stream.
func parkedFilterHash(req *dedupv1.ListParkedRequest) string {
	sum := sha256.Sum256([]byte(req.GetConsumer() + "\x00parked\x00" + req.GetStream()))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}
