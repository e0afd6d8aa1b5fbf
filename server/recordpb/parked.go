package recordpb

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

var skipCauseToProto = map[store.SkipCause]dedupv1.SkipCause{
	store.SkipByGapTimeout: dedupv1.SkipCause_SKIP_CAUSE_GAP_TIMEOUT,
	store.SkipByAdmin:      dedupv1.SkipCause_SKIP_CAUSE_ADMIN,
}

// SkippedRangeFromStore converts a skipped range; nil stays nil.
func SkippedRangeFromStore(r *store.SkippedRange) *dedupv1.SkippedRange {
	if r == nil {
		return nil
	}
	return &dedupv1.SkippedRange{FromSequence: r.From, ToSequence: r.To, Cause: skipCauseToProto[r.Cause],
		SkippedAt: Timestamp(r.At)}
}

// ParkedEventFromStore converts a parked event as listed: no payload, no
// lease; inFlight marks the one handed out.
func ParkedEventFromStore(ev store.ParkedEvent, inFlight bool) *dedupv1.ParkedEvent {
	return &dedupv1.ParkedEvent{Consumer: ev.Consumer, Stream: ev.Stream, Sequence: ev.Sequence,
		Digest: ev.Digest, ParkedAt: Timestamp(ev.ParkedAt), PayloadBytes: ev.PayloadBytes, InFlight: inFlight}
}

// HandedOutFromStore converts a handed-out event with its payload and
// lease; nil stays nil.
func HandedOutFromStore(h *store.HandedOut) *dedupv1.ParkedEvent {
	if h == nil {
		return nil
	}
	pe := ParkedEventFromStore(h.Event, true)
	pe.Payload = h.Event.Payload
	pe.FencingToken = h.FencingToken
	pe.LeaseExpiresAt = Timestamp(h.LeaseExpiresAt)
	return pe
}

// ParkedSummaryFromStore converts a stream's parked summary as of now; nil
// when nothing is parked.
func ParkedSummaryFromStore(s store.ParkedSummary, now time.Time) *dedupv1.ParkedSummary {
	if s.Count == 0 {
		return nil
	}
	return &dedupv1.ParkedSummary{Count: s.Count, Bytes: s.Bytes, Lowest: s.Lowest, Highest: s.Highest,
		OldestParkedAt: Timestamp(s.OldestParkedAt), OldestAge: durationpb.New(max(0, now.Sub(s.OldestParkedAt))),
		GapOpen: s.GapOpen}
}
