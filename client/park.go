package client

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Park mode (StreamService in the proto): a claim with Park of an event
// that comes before its turn stores the event's payload in dedupd and
// answers StreamParked, so the caller can ack its message. When the stream
// reaches the sequence before it, the CompleteStream (or RejectStream)
// that got it there hands the parked event back, already acquired for the
// caller; a pickup worker (DoParked) takes over parked events whose
// holder went away.

// ParkedEvent is one event a stream held back until its turn; handed back
// it carries its payload, fencing token and lease.
type ParkedEvent = dedupv1.ParkedEvent

// ParkedFunc processes a parked event handed back in order: ev.Payload is
// the event as it was parked, ev.Sequence its sequence, and
// ev.FencingToken the token to fence the effect with. Its error is
// recorded as fn's in DoInOrder: Terminal rejects the event as poison, an
// outcome left unknown leaves the claim in flight until its lease runs
// out, any other error releases the event for DoParked.
type ParkedFunc func(ctx context.Context, ev *ParkedEvent) error

// ParkedSettleFunc is StreamSettleFunc for a parked event: it says whether
// the event's effect already happened (found: the event is completed and
// the ParkedFunc does not run). It runs on every acquisition.
type ParkedSettleFunc func(ctx context.Context, ev *ParkedEvent) (found bool, err error)

// ReleasedChain is what became of the parked events handed back after an
// event was finished (DoInOrder with Park, DoParked): each one processed
// in order, until none came back or one could not be finished.
//
// A failure on a released event is not the delivered event's: DoInOrder
// still returns its own outcome (ack the message), and the event that
// could not be finished is in Unfinished. It was released at once for
// DoParked, unless its outcome is unknown (UnfinishedErr matches
// ErrOutcomeUnknown): then DoParked can take it once its lease has run out.
type ReleasedChain struct {
	// Released are the sequences finished, in order: completed, settled
	// or rejected as poison.
	Released []int64
	// Rejected are those of Released that were rejected as poison.
	Rejected []int64
	// Unfinished is the parked event handed back but not finished, and
	// UnfinishedErr why; both nil when the chain ran out.
	Unfinished    *ParkedEvent
	UnfinishedErr error
}

// ParkedOptions tune DoParked. The zero value is usable.
type ParkedOptions struct {
	// Stream limits the pickup to one stream; every stream of the
	// consumer when empty.
	Stream string
	// LeaseTTL is the lease of each event taken (the server default when
	// zero); it is extended while Settle and fn run.
	LeaseTTL time.Duration
	Owner    string
	// Settle looks for the effect of each event before fn runs.
	Settle ParkedSettleFunc
}

// ParkedResult says what DoParked did.
type ParkedResult struct {
	// Found is false when no parked event was ready: nothing ran.
	Found bool
	// Stream is the stream afterwards.
	Stream *Stream
	// The events processed, the one ClaimParked took first.
	ReleasedChain
}

// DoParked picks up one ready parked event of the consumer (of
// opt.Stream when set) with ClaimParked, runs Settle and fn on it as
// DoInOrder runs Released, and goes on with the parked events each
// completion hands back, in order. A parked event is ready when its
// holder's lease ran out (a crash, a lost reply), when it was released
// after a failure, or after a gap was skipped. Run it in a loop, pausing
// while Found is false. The error is ClaimParked's; failures of the
// events are in the result's ReleasedChain.
func (c *Client) DoParked(ctx context.Context, consumer string, opt ParkedOptions, fn ParkedFunc) (ParkedResult, error) {
	owner := uniqueOwner(opt.Owner)
	sent := time.Now()
	ev, st, err := c.ClaimParked(ctx, consumer, opt.Stream, opt.LeaseTTL, owner)
	if err != nil || ev == nil {
		return ParkedResult{}, err
	}
	leaseEnd := sent.Add(streamLeaseSpan(st, opt.LeaseTTL))
	chain, after := c.runReleased(ctx, consumer, st, ev, leaseEnd,
		releasedHandler{fn: fn, settle: opt.Settle, leaseTTL: opt.LeaseTTL})
	return ParkedResult{Found: true, Stream: after, ReleasedChain: chain}, nil
}

// ClaimParked acquires a ready parked event of the consumer (of stream
// when not empty) with its payload, token and lease, and returns it with
// its stream; nil when none is ready.
func (c *Client) ClaimParked(ctx context.Context, consumer, stream string, lease time.Duration, owner string) (*ParkedEvent, *Stream, error) {
	req := &dedupv1.ClaimParkedRequest{Consumer: consumer, Stream: stream, Owner: owner}
	if lease > 0 {
		req.LeaseTtl = durationpb.New(lease)
	}
	resp, err := c.Streams().ClaimParked(ctx, req)
	return resp.GetEvent(), resp.GetStream(), fromStatus(err)
}

// CompleteStreamNext is CompleteStream that also returns the parked event
// right after seq when the completion hands it back (nil otherwise),
// acquired for the caller with a lease of nextLease (the server default
// when zero).
func (c *Client) CompleteStreamNext(ctx context.Context, consumer, stream string, seq, token int64,
	nextLease time.Duration) (*Stream, *ParkedEvent, error) {
	resp, err := c.Streams().CompleteStream(ctx, &dedupv1.CompleteStreamRequest{
		Consumer: consumer, Stream: stream, Sequence: seq, FencingToken: token, NextLeaseTtl: optDuration(nextLease)})
	return resp.GetStream(), resp.GetNext(), fromStatus(err)
}

// RejectStreamNext is RejectStream that also returns the parked event
// handed back, as CompleteStreamNext does.
func (c *Client) RejectStreamNext(ctx context.Context, consumer, stream string, seq, token int64, r Rejection,
	nextLease time.Duration) (*Stream, *ParkedEvent, error) {
	resp, err := c.Streams().RejectStream(ctx, &dedupv1.RejectStreamRequest{
		Consumer: consumer, Stream: stream, Sequence: seq, FencingToken: token,
		Reason: r.Reason, Message: r.Message, Detail: r.Detail, NextLeaseTtl: optDuration(nextLease)})
	return resp.GetStream(), resp.GetNext(), fromStatus(err)
}

// ExtendStreamLease pushes out the lease of sequence seq's claim (an
// acquired one, or a parked event handed out) to ttl from now (the server
// default when zero).
func (c *Client) ExtendStreamLease(ctx context.Context, consumer, stream string, seq, token int64, ttl time.Duration) (*Stream, error) {
	resp, err := c.Streams().ExtendStreamLease(ctx, &dedupv1.ExtendStreamLeaseRequest{
		Consumer: consumer, Stream: stream, Sequence: seq, FencingToken: token, LeaseTtl: optDuration(ttl)})
	return resp.GetStream(), fromStatus(err)
}

// optDuration is d as a Duration, unset when zero (the server default).
func optDuration(d time.Duration) *durationpb.Duration {
	if d <= 0 {
		return nil
	}
	return durationpb.New(d)
}

// streamLeaseSpan is the length of the stream's current lease (its claim
// in flight), else fallback, else the server's default lease.
func streamLeaseSpan(st *Stream, fallback time.Duration) time.Duration {
	if span := st.GetLeaseExpiresAt().AsTime().Sub(st.GetUpdatedAt().AsTime()); st.GetLeaseExpiresAt() != nil && span > 0 {
		return span
	}
	if fallback > 0 {
		return fallback
	}
	return defaultStreamLease
}

// defaultStreamLease is dedupd's default lease, assumed when neither the
// stream nor the caller says one.
const defaultStreamLease = 30 * time.Second
