package store

import (
	"errors"
	"time"
)

// StreamMode says which sequences a stream accepts after its high-water
// mark.
type StreamMode string

const (
	// Dense, the default: sequences are 1, 2, 3, ... with no holes. Only the
	// high-water mark + 1 is acquired; a higher one is a gap, refused with
	// ErrSequenceGap so the caller can hold it back.
	Dense StreamMode = "DENSE"
	// Versions: sequences increase but need not be dense (Kafka offsets, row
	// versions, timestamps). Any sequence above the high-water mark is
	// acquired; once a higher one finishes, lower ones are duplicates
	// (superseded).
	Versions StreamMode = "VERSIONS"
)

// Valid reports whether m is one of the modes.
func (m StreamMode) Valid() bool { return m == Dense || m == Versions }

// StreamOutcome says what a stream claim found.
type StreamOutcome int

const (
	// StreamAcquired: the caller holds the stream's lease for its sequence
	// and must process the event.
	StreamAcquired StreamOutcome = iota + 1
	// StreamInProgress: another caller holds a live lease on the stream.
	StreamInProgress
	// StreamDuplicate: the sequence is at or below the high-water mark; the
	// event was processed (or superseded, or rejected) already. Not an error.
	StreamDuplicate
	// StreamParked: a claim with Park of a sequence past the next one; the
	// event is stored and comes back in order (see ApplyStreamParked).
	StreamParked
)

func (o StreamOutcome) String() string {
	switch o {
	case StreamAcquired:
		return "ACQUIRED"
	case StreamInProgress:
		return "IN_PROGRESS"
	case StreamDuplicate:
		return "DUPLICATE"
	case StreamParked:
		return "PARKED"
	}
	return "UNKNOWN"
}

// Stream is the stored state of one (consumer, stream): an entity whose
// events carry increasing sequence numbers. It is one small row, whatever
// the number of events: the high-water mark answers "processed already?"
// for every past event. Times are UTC with microsecond precision.
type Stream struct {
	Consumer string
	Stream   string
	Mode     StreamMode
	// HighWater is the last sequence finished, by Complete or by a terminal
	// Reject; 0 when none.
	HighWater int64
	// LastOutcome is how HighWater was finished: Completed or Rejected;
	// empty while HighWater was set only by an admin reset or is 0.
	LastOutcome State
	// LastRejection is the rejection of HighWater's event when LastOutcome
	// is Rejected (a poison event skipped past).
	LastRejection *Rejection
	// FinishedToken is the fencing token that finished HighWater, so that
	// the same Complete or Reject repeated is recognised and harmless.
	FinishedToken int64
	// Rejected counts the poison events of the stream's life.
	Rejected int64

	// InFlight is the sequence of the current claim; 0 when none. Its lease
	// may have run out: such a claim awaits reconciliation or takeover.
	InFlight int64
	// Digest is the in-flight event's digest, when its claim gave one.
	Digest []byte
	// FencingToken is the token of the latest claim; it only grows, also
	// across expiry (until the row is reaped).
	FencingToken   int64
	Owner          string
	LeaseExpiresAt time.Time

	CreatedAt time.Time
	UpdatedAt time.Time
	// ExpiresAt is when an idle stream is forgotten (StreamPolicy.StreamTTL
	// after its last write, or after its lease runs out). From then on it
	// counts as absent, as if never seen; see ApplyStream for what a late
	// event then gets.
	ExpiresAt time.Time

	// Parked and ParkedBytes count the stream's parked events and their
	// payloads' bytes; every write that parks or unparks keeps them exact.
	Parked      int64
	ParkedBytes int64
	// Skipped counts the sequences the stream gave up waiting for;
	// LastSkipped is the latest such run, nil when none.
	Skipped     int64
	LastSkipped *SkippedRange
}

// LeaseLive reports whether the stream has an in-flight claim whose lease is
// live at now.
func (s *Stream) LeaseLive(now time.Time) bool {
	return s.InFlight != 0 && Now(now).Before(s.LeaseExpiresAt)
}

// StreamStart is the rule for the first sequence of a stream with no record.
type StreamStart string

const (
	// StartAtOne, the default: a new stream expects sequence 1, as if its
	// high-water mark were 0. After a stream is forgotten, a late event
	// other than 1 is refused as a gap rather than processed again.
	StartAtOne StreamStart = "ONE"
	// StartAtFirstClaim: a new stream (dense mode) acquires whatever
	// sequence is claimed first. This gives up two things: an earlier
	// event delivered after a later one is a duplicate and never processed,
	// and a forgotten stream processes any late redelivery again.
	StartAtFirstClaim StreamStart = "FIRST_CLAIM"
)

// StreamPolicy holds the rules in force for one stream call.
type StreamPolicy struct {
	// DefaultLeaseTTL applies when a claim or extension names no lease.
	DefaultLeaseTTL time.Duration
	// StreamTTL is how long an idle stream is kept (DefaultStreamTTL when
	// the server is not told otherwise).
	StreamTTL time.Duration
	// Mode, when set, fixes the mode of the consumer's new streams: a claim
	// of a new stream naming another is refused with ErrModeMismatch. Empty
	// lets each stream's first claim choose (Dense when it names none). A
	// stream created before the policy changed keeps its own mode.
	Mode StreamMode
	// Start is the rule for a new stream's first sequence; empty means
	// StartAtOne.
	Start StreamStart
	// MaxParked bounds one stream's parked events; zero means
	// DefaultMaxParked.
	MaxParked int64
	// MaxParkedBytes bounds the consumer's parked payload bytes over all
	// its streams; zero means no bound. A park is checked against the total
	// read in its own write, so parks racing on different streams may pass
	// it by one payload each.
	MaxParkedBytes int64
	// GapTimeout and OnGapTimeout: see SkipGapParams. Zero GapTimeout never
	// times out; empty OnGapTimeout means GapHold.
	GapTimeout   time.Duration
	OnGapTimeout GapAction
}

// DefaultStreamTTL is the idle time after which a stream is forgotten
// unless the consumer's policy says otherwise: streams are small, and a
// late redelivery can come long after the event.
const DefaultStreamTTL = 30 * 24 * time.Hour

// ClaimStreamParams are the inputs of StreamStore.ClaimStream.
type ClaimStreamParams struct {
	Consumer string
	Stream   string
	Sequence int64
	// Mode is the mode the caller expects; empty accepts the stream's.
	Mode StreamMode
	// Digest is optional; when both it and the in-flight claim's are
	// non-empty and differ, a claim of the in-flight sequence is refused
	// with ErrDigestMismatch.
	Digest []byte
	// LeaseTTL of zero means Policy.DefaultLeaseTTL.
	LeaseTTL time.Duration
	Owner    string
	// Park stores a dense stream's event past the next sequence with its
	// Payload and answers StreamParked (see ApplyStreamParked).
	Park    bool
	Payload []byte
	Policy  StreamPolicy
}

// CompleteStreamParams are the inputs of StreamStore.CompleteStream.
type CompleteStreamParams struct {
	Consumer     string
	Stream       string
	Sequence     int64
	FencingToken int64
	// NextLeaseTTL is the lease of a parked event handed back; zero means
	// Policy.DefaultLeaseTTL.
	NextLeaseTTL time.Duration
	Policy       StreamPolicy
}

// RejectStreamParams are the inputs of StreamStore.RejectStream, a terminal
// rejection: the poison event is skipped past.
type RejectStreamParams struct {
	Consumer     string
	Stream       string
	Sequence     int64
	FencingToken int64
	Rejection    Rejection
	// NextLeaseTTL: as for CompleteStreamParams.
	NextLeaseTTL time.Duration
	Policy       StreamPolicy
}

// ReleaseStreamParams are the inputs of StreamStore.ReleaseStream.
type ReleaseStreamParams struct {
	Consumer     string
	Stream       string
	Sequence     int64
	FencingToken int64
	Policy       StreamPolicy
}

// ExtendStreamLeaseParams are the inputs of StreamStore.ExtendStreamLease.
type ExtendStreamLeaseParams struct {
	Consumer     string
	Stream       string
	Sequence     int64
	FencingToken int64
	// LeaseTTL of zero means Policy.DefaultLeaseTTL.
	LeaseTTL time.Duration
	Policy   StreamPolicy
}

// ResetStreamParams are the inputs of StreamStore.ResetStream, the admin's
// way to move a high-water mark either way.
type ResetStreamParams struct {
	Consumer  string
	Stream    string
	HighWater int64
	// Mode is the mode of a stream the reset creates; empty means the
	// policy's, else Dense. An existing stream keeps its own.
	Mode StreamMode
	// DryRun decides and returns the stream the reset would leave, and
	// writes nothing.
	DryRun bool
	Policy StreamPolicy
}

// StreamClaimResult is what StreamStore.ClaimStream returns.
type StreamClaimResult struct {
	Outcome StreamOutcome
	// Stream is the stored stream after the claim.
	Stream Stream
	// RetryAfter is set for StreamInProgress: the time left on the lease.
	RetryAfter time.Duration
}

// ListStreamsParams are the inputs of StreamStore.ListStreams.
type ListStreamsParams struct {
	Consumer string
	// LeaseExpired keeps only streams with an in-flight claim whose lease
	// has run out: the reconciliation queue.
	LeaseExpired bool
	// AfterStream continues a listing: only streams strictly greater
	// (bytewise) are returned.
	AfterStream string
	// Limit is the most streams returned; it must be positive.
	Limit int
}

// Validate reports parameters that no store accepts.
func (p ListStreamsParams) Validate() error {
	switch {
	case p.Consumer == "":
		return errors.New("store: ListStreams: consumer is required")
	case p.Limit <= 0:
		return errors.New("store: ListStreams: limit must be positive")
	}
	return nil
}
