package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StreamStore is the durable home of streams: the stream half of Backend.
// The rules of Store hold here too: every method is safe for concurrent
// use, also from several servers sharing one database; every write is
// atomic on the stream's one row and decided by ApplyStream on the store's
// clock; a refusal changes nothing; ErrUnavailable and the context's error
// after the write was sent mean an unknown outcome, and every write is
// safe to repeat.
type StreamStore interface {
	StreamAdmin
	ParkStore

	// ClaimStream applies a claim of one sequence (see ApplyStream and
	// ApplyStreamParked). Among any number of concurrent claims of a
	// stream's next sequence exactly one is StreamAcquired. A claim with
	// Park past the next sequence stores the event and its payload with
	// the stream, durably before StreamParked is returned. Refusals:
	// ErrSequenceGap (a *StreamConflictError carrying the expected
	// sequence), ErrModeMismatch, ErrDigestMismatch, ErrParkFull.
	ClaimStream(ctx context.Context, p ClaimStreamParams) (StreamClaimResult, error)

	// CompleteStream finishes the in-flight sequence under its fencing
	// token and moves the high-water mark to it. When the next sequence is
	// parked, the same atomic write acquires it for the caller (owner and
	// fencing token as for a claim, lease p.NextLeaseTTL) and returns it as
	// Next; the finished sequence's own parked copy, if it was one, is
	// deleted. Repeating the call that finished the high-water mark returns
	// the stream unchanged, and the same Next while it is still in flight
	// under the token it was handed out with (a lost reply loses nothing;
	// once its lease runs out it is ready for ClaimParked). Otherwise
	// ErrLeaseLost when the token or sequence is not the in-flight claim's,
	// or the stream is absent; ErrAlreadyFinished when the same token
	// finished the sequence with the other outcome.
	CompleteStream(ctx context.Context, p CompleteStreamParams) (StreamFinishResult, error)

	// RejectStream finishes the in-flight sequence as a poison event: the
	// high-water mark moves past it and the rejection is recorded. Hand-off,
	// errors and repeats as for CompleteStream.
	RejectStream(ctx context.Context, p RejectStreamParams) (StreamFinishResult, error)

	// ReleaseStream gives up the in-flight claim without moving the
	// high-water mark, so the sequence can be claimed again at once.
	// Repeating it is harmless until the next claim. Errors as for
	// CompleteStream (ErrAlreadyFinished when the token finished it).
	ReleaseStream(ctx context.Context, p ReleaseStreamParams) (Stream, error)

	// ExtendStreamLease renews the in-flight lease from now. Errors as for
	// CompleteStream.
	ExtendStreamLease(ctx context.Context, p ExtendStreamLeaseParams) (Stream, error)

	// GetStream returns a live stream, or ErrNotFound.
	GetStream(ctx context.Context, consumer, stream string) (Stream, error)

	// DeleteExpiredStreams deletes at most limit streams whose ExpiresAt has
	// passed, with their parked events, and returns how many streams; it
	// never deletes a live stream.
	DeleteExpiredStreams(ctx context.Context, limit int) (int, error)
}

// StreamAdmin is what operators need of streams beyond the hot path:
// moving a mark by hand, listing, and per-consumer stream policies. The
// rules of StreamStore hold.
type StreamAdmin interface {
	// ResetStream sets the high-water mark to p.HighWater, down as well as
	// up: the only way it ever decreases. An in-flight claim is dropped and
	// the fencing token advanced, so its holder gets ErrLeaseLost. A stream
	// with no record is created. With DryRun nothing is written.
	ResetStream(ctx context.Context, p ResetStreamParams) (Stream, error)

	// ListStreams returns at most p.Limit live streams of p.Consumer in
	// ascending bytewise stream order, greater than p.AfterStream. Paging
	// with AfterStream set to the last stream returned visits every stream
	// that stays live throughout exactly once.
	ListStreams(ctx context.Context, p ListStreamsParams) ([]Stream, error)

	// StreamStats returns the stream counts of one consumer, or of every
	// consumer with live streams when consumer is empty, ordered bytewise by
	// consumer. A consumer with no live stream is absent from the result.
	// Expired streams count as absent, as everywhere.
	StreamStats(ctx context.Context, consumer string) ([]ConsumerStreamStats, error)

	// InFlightLeases returns the live streams with a claim in flight of
	// every consumer that has any, summed up per consumer in bytewise
	// consumer order: Held, Expired and OldestUpdatedAt agree with
	// StreamStats' InFlight, LeaseExpired and OldestInFlightAt. It reads
	// only the streams in flight (their index), as PendingLeases does.
	InFlightLeases(ctx context.Context) ([]LeaseStats, error)

	// PutStreamPolicy creates or replaces a consumer's stream policy and
	// returns it as stored, with UpdatedAt set.
	PutStreamPolicy(ctx context.Context, p ConsumerStreamPolicy) (ConsumerStreamPolicy, error)

	// GetStreamPolicy returns a consumer's stream policy, or ErrNoPolicy.
	GetStreamPolicy(ctx context.Context, consumer string) (ConsumerStreamPolicy, error)

	// DeleteStreamPolicy deletes a consumer's stream policy and returns it,
	// or ErrNoPolicy.
	DeleteStreamPolicy(ctx context.Context, consumer string) (ConsumerStreamPolicy, error)
}

// ConsumerStreamStats counts one consumer's live streams. Stats of keys
// and of streams are apart because they are apart in every store; the API
// joins them by consumer.
type ConsumerStreamStats struct {
	Consumer string
	// Streams counts live streams.
	Streams int64
	// InFlight counts live streams with a claim in flight, its lease live or
	// not; LeaseExpired those whose lease has run out: the streams'
	// reconciliation queue.
	InFlight     int64
	LeaseExpired int64
	// OldestInFlightAt is the least recent UpdatedAt of the streams in
	// flight (their last claim or lease extension); zero when none is.
	OldestInFlightAt time.Time
}

// ConsumerStreamPolicy is the stored stream policy of one consumer. Zero
// fields take the server's defaults. Mode fixes the mode of new streams
// (a claim naming the other is refused); an existing stream keeps the mode
// it was created with. Start applies to streams with no mark yet.
type ConsumerStreamPolicy struct {
	Consumer  string
	StreamTTL time.Duration
	Mode      StreamMode
	Start     StreamStart
	// MaxParked bounds each stream's parked events (0: DefaultMaxParked);
	// GapTimeout (0: never) and OnGapTimeout (empty: GapHold) say when a
	// stream gives up on a gap.
	MaxParked    int64
	GapTimeout   time.Duration
	OnGapTimeout GapAction
	// UpdatedAt is set by the store when the policy is written.
	UpdatedAt time.Time
}

// Validate reports stream policies that no store accepts.
func (p ConsumerStreamPolicy) Validate() error {
	switch {
	case p.Consumer == "":
		return errors.New("store: stream policy: consumer is required")
	case p.StreamTTL < 0:
		return errors.New("store: stream policy: stream TTL must not be negative")
	case p.Mode != "" && !p.Mode.Valid():
		return fmt.Errorf("store: stream policy: unknown mode %q", p.Mode)
	case p.Start != "" && p.Start != StartAtOne && p.Start != StartAtFirstClaim:
		return fmt.Errorf("store: stream policy: unknown start rule %q", p.Start)
	case p.MaxParked < 0 || p.GapTimeout < 0:
		return errors.New("store: stream policy: max parked and gap timeout must not be negative")
	case p.OnGapTimeout != "" && p.OnGapTimeout != GapHold && p.OnGapTimeout != GapSkip:
		return fmt.Errorf("store: stream policy: unknown gap timeout action %q", p.OnGapTimeout)
	}
	return nil
}

// The stream refusals, matched with errors.Is; a StreamConflictError
// carries the details.
var (
	// ErrSequenceGap: a dense stream was claimed past its next sequence.
	ErrSequenceGap = errors.New("sequence is past the next one the stream expects")
	// ErrModeMismatch: the claim names another mode than the stream's, or
	// than the consumer's policy fixes.
	ErrModeMismatch = errors.New("stream mode differs")
)

// StreamConflictError is a stream refusal caused by the stored stream.
type StreamConflictError struct {
	Err    error
	Stream Stream
	// Expected is the next sequence a dense stream accepts; set with
	// ErrSequenceGap.
	Expected int64
}

func (e *StreamConflictError) Error() string {
	if errors.Is(e.Err, ErrSequenceGap) {
		return fmt.Sprintf("%s (consumer %q, stream %q, expected sequence %d)",
			e.Err, e.Stream.Consumer, e.Stream.Stream, e.Expected)
	}
	return fmt.Sprintf("%s (consumer %q, stream %q, mode %s, high-water mark %d, fencing token %d)",
		e.Err, e.Stream.Consumer, e.Stream.Stream, e.Stream.Mode, e.Stream.HighWater, e.Stream.FencingToken)
}

func (e *StreamConflictError) Unwrap() error { return e.Err }
