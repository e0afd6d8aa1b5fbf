package store

import (
	"context"
	"errors"
	"time"
)

// Park mode: a dense stream's claim of a sequence past the next one, with
// Park set, stores the event (its payload) instead of refusing it as a gap,
// and the stream hands the parked events back in order as its mark reaches
// them. The rules live in ApplyStreamParked; this file holds the contract's
// types and the ParkStore methods.

// GapAction is what a stream does once its gap has been open for the
// policy's GapTimeout.
type GapAction string

const (
	// GapHold, the default: keep waiting; nothing is given up.
	GapHold GapAction = "HOLD"
	// GapSkip: give up on the missing sequences (see SkipGapParams).
	GapSkip GapAction = "SKIP"
)

// SkipCause says who skipped a gap.
type SkipCause string

const (
	SkipByGapTimeout SkipCause = "GAP_TIMEOUT"
	SkipByAdmin      SkipCause = "ADMIN"
)

// DefaultMaxParked is the most events one stream holds parked unless its
// consumer's policy says otherwise.
const DefaultMaxParked = 1000

// SkippedRange is a run of sequences a stream gave up waiting for: From to
// To inclusive.
type SkippedRange struct {
	From, To int64
	Cause    SkipCause
	At       time.Time
}

// ParkedEvent is one stored event waiting for its turn. It lives as long as
// its stream: a stream forgotten (expired or reaped) forgets its parked
// events with it.
type ParkedEvent struct {
	Consumer string
	Stream   string
	Sequence int64
	// Digest is the park claim's; nil when it gave none.
	Digest []byte
	// Payload is nil where a read leaves payloads out (listings, and the
	// events ApplyStreamParked only counts).
	Payload      []byte
	PayloadBytes int64
	ParkedAt     time.Time
}

// HandedOut is a parked event acquired for a caller: its stream's claim in
// flight is the event's sequence under FencingToken, exactly as if the
// caller had claimed it.
type HandedOut struct {
	Event          ParkedEvent
	FencingToken   int64
	Owner          string
	LeaseExpiresAt time.Time
}

// StreamFinishResult is what CompleteStream and RejectStream return.
type StreamFinishResult struct {
	// Stream is the stored stream after the call.
	Stream Stream
	// Next is the parked event right after the finished sequence, acquired
	// for the caller by the same atomic write that moved the mark; nil
	// when that sequence is not parked.
	Next *HandedOut
}

// ClaimParkedParams are the inputs of ParkStore.ClaimParked.
type ClaimParkedParams struct {
	Consumer string
	// Stream, when set, limits the claim to that stream; empty takes the
	// ready event of any stream of the consumer.
	Stream string
	// LeaseTTL of zero means Policy.DefaultLeaseTTL.
	LeaseTTL time.Duration
	Owner    string
	Policy   StreamPolicy
}

// ParkedClaimResult is what ParkStore.ClaimParked returns.
type ParkedClaimResult struct {
	// Event is nil when no parked event was ready.
	Event *HandedOut
	// Stream is the event's stream after the claim; zero with no event.
	Stream Stream
}

// ListParkedParams are the inputs of ParkStore.ListParked.
type ListParkedParams struct {
	Consumer string
	Stream   string
	// AfterSequence continues a listing: only greater sequences are
	// returned.
	AfterSequence int64
	// Limit is the most events returned; it must be positive.
	Limit int
}

// Validate reports parameters that no store accepts.
func (p ListParkedParams) Validate() error {
	switch {
	case p.Consumer == "" || p.Stream == "":
		return errors.New("store: ListParked: consumer and stream are required")
	case p.Limit <= 0:
		return errors.New("store: ListParked: limit must be positive")
	case p.AfterSequence < 0:
		return errors.New("store: ListParked: after sequence must not be negative")
	}
	return nil
}

// ParkedSummary describes one stream's parked events as of a read.
type ParkedSummary struct {
	Count, Bytes    int64
	Lowest, Highest int64
	OldestParkedAt  time.Time
	// GapOpen is true while the sequence right after the mark is not
	// parked, so every parked event waits on a missing one.
	GapOpen bool
}

// DropParkedParams are the inputs of ParkStore.DropParked, an admin's
// deletion of parked events From to To inclusive (To 0: no upper bound).
type DropParkedParams struct {
	Consumer, Stream string
	From, To         int64
	DryRun           bool
	Policy           StreamPolicy
}

// DropParkedResult is what ParkStore.DropParked returns.
type DropParkedResult struct {
	Stream  Stream
	Dropped int64
}

// SkipGapParams are the inputs of ParkStore.SkipGap: give up on the
// sequences between the mark and the lowest parked event.
type SkipGapParams struct {
	Consumer, Stream string
	// Cause SkipByGapTimeout skips only when the policy's OnGapTimeout is
	// GapSkip, no live lease is held, and the oldest parked event has
	// waited GapTimeout; otherwise the call is refused with ErrNoGap and
	// changes nothing, so a reaper may ask for every stream it suspects.
	// SkipByAdmin skips whenever there is a gap, dropping a claim in flight
	// (its holder gets ErrLeaseLost).
	Cause  SkipCause
	DryRun bool
	Policy StreamPolicy
}

// SkipGapResult is what ParkStore.SkipGap returns.
type SkipGapResult struct {
	Stream  Stream
	Skipped SkippedRange
}

// OpenGap is a stream whose parked events wait on a missing sequence.
type OpenGap struct {
	Consumer, Stream string
	// HighWater is the mark; HighWater + 1 is missing.
	HighWater int64
	// Lowest is the lowest parked sequence.
	Lowest         int64
	OldestParkedAt time.Time
	// LeaseLive is true while a claim of the missing sequence is in flight.
	LeaseLive bool
}

// ListOpenGapsParams are the inputs of ParkStore.ListOpenGaps.
type ListOpenGapsParams struct {
	// AfterConsumer and AfterStream continue a listing: only streams
	// greater in (consumer, stream) order are returned.
	AfterConsumer, AfterStream string
	// Limit is the most streams returned; it must be positive.
	Limit int
}

// ConsumerParked is one consumer's parked events, for metrics.
type ConsumerParked struct {
	Consumer       string
	Events, Bytes  int64
	OldestParkedAt time.Time
}

// The park refusals, matched with errors.Is; a StreamConflictError
// carries the stream.
var (
	// ErrParkFull: the stream is at its MaxParked, or the consumer's parked
	// payloads at the byte budget; nothing was stored.
	ErrParkFull = errors.New("no room to park the event")
	// ErrNoGap: SkipGap found no parked event past an open gap (or, for a
	// gap timeout, none due).
	ErrNoGap = errors.New("no open gap before a parked event")
)

// ParkStore is the park half of StreamStore. The rules of StreamStore hold:
// every write to a stream and its parked events is one atomic step decided
// by ApplyStreamParked, so a parked event and the stream's mark never
// disagree, whatever crashes.
type ParkStore interface {
	// ClaimParked acquires a ready parked event (one whose sequence is the
	// mark + 1 and that no live lease holds) of p.Stream, or of any stream
	// of p.Consumer when p.Stream is empty, as a ClaimStream of it would:
	// a new fencing token, p.LeaseTTL, p.Owner. Among concurrent callers
	// each ready event goes to exactly one. No event ready is not an error:
	// the result's Event is nil. Over all streams a store may look at a
	// bounded set of candidates, so a call racing other pickups can find
	// none while more are ready: pickup workers call again.
	ClaimParked(ctx context.Context, p ClaimParkedParams) (ParkedClaimResult, error)

	// ListParked returns at most p.Limit parked events of a live stream in
	// ascending sequence order, greater than p.AfterSequence, without their
	// payloads (PayloadBytes is set). A stream absent or expired has none.
	ListParked(ctx context.Context, p ListParkedParams) ([]ParkedEvent, error)

	// GetParkedSummary returns the parked events' summary of a live
	// stream; ErrNotFound when the stream is absent or expired.
	GetParkedSummary(ctx context.Context, consumer, stream string) (ParkedSummary, error)

	// ListOpenGaps returns at most p.Limit live dense streams, in
	// (consumer, stream) order after p's cursor, that hold parked events
	// while the mark + 1 is not parked. The reaper uses it for gap
	// timeouts and metrics.
	ListOpenGaps(ctx context.Context, p ListOpenGapsParams) ([]OpenGap, error)

	// ParkedTotals returns every consumer's parked events of live streams,
	// for metrics, in consumer order.
	ParkedTotals(ctx context.Context) ([]ConsumerParked, error)

	// DropParked deletes a live stream's parked events in [p.From, p.To]
	// (To 0: no upper bound) and returns the stream and how many went. A
	// claim in flight stays. ErrNotFound when the stream is absent. With
	// DryRun nothing is written.
	DropParked(ctx context.Context, p DropParkedParams) (DropParkedResult, error)

	// SkipGap moves the mark of a live dense stream to its lowest parked
	// sequence - 1 and records the skipped range on the stream
	// (LastSkipped, Skipped); the parked events are then ready in order.
	// ErrNotFound when the stream is absent; ErrNoGap when there is no gap
	// to skip (see SkipGapParams.Cause). With DryRun nothing is written.
	SkipGap(ctx context.Context, p SkipGapParams) (SkipGapResult, error)
}

// ClaimParkedOf is ClaimParked of any stream for a store: it tries
// claimOne on each of candidates (streams the store found with a ready
// event, in its order) with p.Stream set, until one hands out an event.
// A candidate taken by a concurrent caller meanwhile simply hands out
// nothing, so the next is tried.
func ClaimParkedOf(ctx context.Context, p ClaimParkedParams, candidates []string,
	claimOne func(context.Context, ClaimParkedParams) (StreamDecision, error)) (StreamDecision, error) {
	for _, stream := range candidates {
		p.Stream = stream
		d, err := claimOne(ctx, p)
		if err != nil || d.HandedOut != nil {
			return d, err
		}
	}
	return StreamDecision{}, nil
}

// ParkedClaimOf is the result of a ClaimParked decision.
func ParkedClaimOf(d StreamDecision) ParkedClaimResult {
	if d.HandedOut == nil {
		return ParkedClaimResult{}
	}
	return ParkedClaimResult{Event: d.HandedOut, Stream: d.Stream}
}

// ParkedSummaryOf is the summary of stream st whose parked events span
// lowest to highest, the oldest parked at oldest (as a store's aggregate
// read finds them; zeros when none).
func ParkedSummaryOf(st Stream, lowest, highest int64, oldest time.Time) ParkedSummary {
	s := ParkedSummary{Count: st.Parked, Bytes: st.ParkedBytes, Lowest: lowest, Highest: highest}
	if st.Parked > 0 {
		s.OldestParkedAt = oldest
		s.GapOpen = st.Mode == Dense && lowest > st.HighWater+1
	}
	return s
}

// OpenGapOf is st as ListOpenGaps reports it, and whether its gap is open.
func OpenGapOf(st Stream, lowest int64, oldest, now time.Time) (OpenGap, bool) {
	s := ParkedSummaryOf(st, lowest, lowest, oldest)
	return OpenGap{Consumer: st.Consumer, Stream: st.Stream, HighWater: st.HighWater, Lowest: lowest,
		OldestParkedAt: oldest, LeaseLive: st.LeaseLive(now)}, s.GapOpen
}
