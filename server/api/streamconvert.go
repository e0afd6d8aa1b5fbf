package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// The ErrorInfo reasons of streams (see proto/dedup/v1/error_reason.proto).
const (
	ReasonSequenceGap        = "SEQUENCE_GAP"
	ReasonStreamModeMismatch = "STREAM_MODE_MISMATCH"
	ReasonStreamNotFound     = "STREAM_NOT_FOUND"
)

// MetaExpectedSequence is the ErrorInfo metadata key of a SEQUENCE_GAP that
// gives the sequence the stream expects next.
const MetaExpectedSequence = "expected_sequence"

// streamFail is the status a stream handler returns for err. Stream
// refusals get their own reasons and carry the stored stream as a detail;
// everything else is mapped by Status, the one table for shared errors.
func streamFail(ctx context.Context, log *slog.Logger, err error, consumer, stream string) error {
	var conflict *store.StreamConflictError
	switch {
	case errors.As(err, &conflict):
		return streamConflictStatus(conflict, consumer, stream)
	case errors.Is(err, store.ErrNotFound):
		meta := streamMeta(consumer, stream)
		return withDetails(codes.NotFound, "no live stream "+strconv.Quote(capText(stream)), ReasonStreamNotFound, meta).Err()
	}
	st := Status(err, consumer, "")
	if st.Code() == codes.Internal {
		log.ErrorContext(ctx, "internal error", "consumer", consumer, "stream", capText(stream), "err", err)
	}
	return st.Err()
}

func streamConflictStatus(c *store.StreamConflictError, consumer, stream string) error {
	meta := streamMeta(consumer, stream)
	meta["high_water"] = strconv.FormatInt(c.Stream.HighWater, 10)
	meta["mode"] = string(c.Stream.Mode)
	code, reason := codes.FailedPrecondition, ReasonAlreadyFinished
	switch {
	case errors.Is(c, store.ErrSequenceGap):
		reason = ReasonSequenceGap
		meta[MetaExpectedSequence] = strconv.FormatInt(c.Expected, 10)
	case errors.Is(c, store.ErrModeMismatch):
		reason = ReasonStreamModeMismatch
	case errors.Is(c, store.ErrDigestMismatch):
		reason = ReasonDigestMismatch
	case errors.Is(c, store.ErrLeaseLost):
		code, reason = codes.Aborted, ReasonLeaseLost
		meta["fencing_token"] = strconv.FormatInt(c.Stream.FencingToken, 10)
	}
	msg := fmt.Sprintf("%s (stream %q, high-water mark %d)", c.Err, capText(stream), c.Stream.HighWater)
	if reason == ReasonSequenceGap {
		msg = fmt.Sprintf("%s: stream %q expects sequence %d", c.Err, capText(stream), c.Expected)
	}
	return withDetails(code, msg, reason, meta, StreamToProto(c.Stream)).Err()
}

func streamMeta(consumer, stream string) map[string]string {
	meta := map[string]string{}
	if consumer != "" {
		meta["consumer"] = consumer
	}
	if stream != "" {
		meta["stream"] = capText(stream)
	}
	return meta
}

// capText bounds a caller's value echoed in an error or a log line.
func capText(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// StreamToProto converts a stored stream to its API form.
func StreamToProto(st store.Stream) *dedupv1.Stream {
	ps := &dedupv1.Stream{
		Consumer: st.Consumer, Stream: st.Stream, Mode: streamModeToProto[st.Mode],
		HighWater: st.HighWater, LastOutcome: stateToProto[st.LastOutcome], Rejected: st.Rejected,
		InFlight: st.InFlight, Digest: st.Digest, FencingToken: st.FencingToken, Owner: st.Owner,
		LeaseExpiresAt: timestamp(st.LeaseExpiresAt), CreatedAt: timestamp(st.CreatedAt),
		UpdatedAt: timestamp(st.UpdatedAt), ExpiresAt: timestamp(st.ExpiresAt),
	}
	if rj := st.LastRejection; rj != nil {
		ps.LastRejection = &dedupv1.Rejection{Reason: rj.Reason, Message: rj.Message, Detail: rj.Detail}
	}
	return ps
}

var streamOutcomeToProto = map[store.StreamOutcome]dedupv1.StreamOutcome{
	store.StreamAcquired:   dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED,
	store.StreamInProgress: dedupv1.StreamOutcome_STREAM_OUTCOME_IN_PROGRESS,
	store.StreamDuplicate:  dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE,
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
