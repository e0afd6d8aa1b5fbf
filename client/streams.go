package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Stream is everything dedupd remembers about one stream: an entity whose
// events carry sequence numbers (see StreamService in the proto).
type Stream = dedupv1.Stream

// StreamOutcome is what a ClaimStream found.
type StreamOutcome = dedupv1.StreamOutcome

// The outcomes of a ClaimStream.
const (
	StreamAcquired   = dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED
	StreamInProgress = dedupv1.StreamOutcome_STREAM_OUTCOME_IN_PROGRESS
	StreamDuplicate  = dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE
	// StreamParked: a claim with Park of an event before its turn; dedupd
	// holds the event (park.go).
	StreamParked = dedupv1.StreamOutcome_STREAM_OUTCOME_PARKED
)

// The stream modes: Dense (the default) wants 1, 2, 3, ...; Versions takes
// any increasing numbers (offsets, row versions).
const (
	Dense    = dedupv1.StreamMode_STREAM_MODE_DENSE
	Versions = dedupv1.StreamMode_STREAM_MODE_VERSIONS
)

// StreamClaimOptions are the optional fields of a ClaimStream.
type StreamClaimOptions struct {
	LeaseTTL time.Duration
	Owner    string
	// Mode is the mode the caller expects; zero accepts the stream's.
	Mode dedupv1.StreamMode
	// Digest of the event, optional.
	Digest []byte
	// Wait is as ClaimOptions.Wait: the server answers DUPLICATE once the
	// holder finishes this sequence, ACQUIRED once it releases it or its
	// lease runs out.
	Wait time.Duration
	// Park parks the event if it comes before its turn (StreamParked
	// instead of a *GapError), with Payload, the event as it will be
	// handed back (park.go).
	Park    bool
	Payload []byte
}

// StreamClaimResult is what a ClaimStream found.
type StreamClaimResult struct {
	Outcome StreamOutcome
	// Stream is the stream after the claim; its HighWater answers a
	// duplicate.
	Stream       *Stream
	FencingToken int64
	RetryAfter   time.Duration
}

// Streams is the generated StreamService client on the client's
// connection, with its credentials and retries (for ListStreams paging).
func (c *Client) Streams() dedupv1.StreamServiceClient { return dedupv1.NewStreamServiceClient(c.ic) }

// StreamAdmin is the generated StreamAdminService client.
func (c *Client) StreamAdmin() dedupv1.StreamAdminServiceClient {
	return dedupv1.NewStreamAdminServiceClient(c.ic)
}

// ClaimStream claims sequence seq of a stream. A claim past the sequence a
// dense stream expects fails with a *GapError (ErrSequenceGap).
func (c *Client) ClaimStream(ctx context.Context, consumer, stream string, seq int64, opt StreamClaimOptions) (StreamClaimResult, error) {
	req := &dedupv1.ClaimStreamRequest{Consumer: consumer, Stream: stream, Sequence: seq,
		Mode: opt.Mode, Digest: opt.Digest, Owner: opt.Owner, Park: opt.Park, Payload: opt.Payload}
	if opt.LeaseTTL > 0 {
		req.LeaseTtl = durationpb.New(opt.LeaseTTL)
	}
	if opt.Wait > 0 {
		req.Wait = durationpb.New(opt.Wait)
	}
	resp, err := c.Streams().ClaimStream(ctx, req)
	if err != nil {
		return StreamClaimResult{}, asGapError(fromStatus(err), stream, seq)
	}
	return StreamClaimResult{Outcome: resp.GetOutcome(), Stream: resp.GetStream(),
		FencingToken: resp.GetFencingToken(), RetryAfter: resp.GetRetryAfter().AsDuration()}, nil
}

// CompleteStream finishes sequence seq and moves the mark to it. Repeating
// it is harmless.
func (c *Client) CompleteStream(ctx context.Context, consumer, stream string, seq, token int64) (*Stream, error) {
	resp, err := c.Streams().CompleteStream(ctx, &dedupv1.CompleteStreamRequest{
		Consumer: consumer, Stream: stream, Sequence: seq, FencingToken: token})
	return resp.GetStream(), fromStatus(err)
}

// RejectStream finishes sequence seq as a poison event: the mark moves
// past it, so the stream goes on. r.Retryable is ignored (see
// ReleaseStream).
func (c *Client) RejectStream(ctx context.Context, consumer, stream string, seq, token int64, r Rejection) (*Stream, error) {
	resp, err := c.Streams().RejectStream(ctx, &dedupv1.RejectStreamRequest{
		Consumer: consumer, Stream: stream, Sequence: seq, FencingToken: token,
		Reason: r.Reason, Message: r.Message, Detail: r.Detail})
	return resp.GetStream(), fromStatus(err)
}

// ReleaseStream gives the claim up without moving the mark, so the event
// can be processed again.
func (c *Client) ReleaseStream(ctx context.Context, consumer, stream string, seq, token int64) (*Stream, error) {
	resp, err := c.Streams().ReleaseStream(ctx, &dedupv1.ReleaseStreamRequest{
		Consumer: consumer, Stream: stream, Sequence: seq, FencingToken: token})
	return resp.GetStream(), fromStatus(err)
}

// GetStream reads a stream; ErrStreamNotFound when it has no live record.
func (c *Client) GetStream(ctx context.Context, consumer, stream string) (*Stream, error) {
	resp, err := c.Streams().GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: consumer, Stream: stream})
	return resp.GetStream(), fromStatus(err)
}

// InOrderOptions tune DoInOrder. The zero value is usable.
type InOrderOptions struct {
	// LeaseTTL is the lease length; the server default when zero.
	// DoInOrder extends it while Settle and fn run, and cancels their
	// context (cause ErrLeaseLost) if it is lost.
	LeaseTTL time.Duration
	Owner    string
	Mode     dedupv1.StreamMode
	Digest   []byte
	// MaxWait bounds the wait while another caller holds the stream (30s
	// when zero; negative: do not wait).
	MaxWait time.Duration
	// Settle looks for the effect of event seq before fn runs; see
	// StreamSettleFunc.
	Settle StreamSettleFunc
	// Park parks the event when it arrives before its turn, and processes
	// the parked events that come back after it (park.go): Payload is
	// the event as Released will get it back, Released processes each
	// parked event handed back (required with Park), and SettleReleased,
	// optional, is Settle for them.
	Park           bool
	Payload        []byte
	Released       ParkedFunc
	SettleReleased ParkedSettleFunc
}

// StreamSettleFunc is SettleFunc for DoInOrder: it gets what fn gets and
// says whether the event's effect already happened (found: the sequence is
// completed and fn does not run). A Terminal error rejects the event as
// poison; any other error leaves the claim PENDING and is returned as an
// *UnknownOutcomeError (ErrSettleFailed).
//
// A stream keeps no attempt count per event, so DoInOrder cannot tell a
// first delivery from a takeover: it runs Settle on every acquisition.
type StreamSettleFunc func(ctx context.Context, token int64) (found bool, err error)

// InOrderResult says what DoInOrder did.
type InOrderResult struct {
	// Duplicate is true when the event was at or below the mark and fn
	// did not run.
	Duplicate bool
	// Stream is the stream afterwards.
	Stream *Stream
	// Parked is true when, with Park, the event came before its turn:
	// dedupd holds it, fn did not run, and the message can be acked.
	Parked bool
	// The parked events processed after seq, in order (park.go).
	ReleasedChain
}

// DoInOrder processes event seq of a stream at most once and in order:
//
//   - it claims seq; a duplicate (seq at or below the mark) returns with
//     Duplicate set, without running fn;
//   - a gap (an earlier event not processed yet) returns a *GapError
//     carrying the expected sequence: hold the event back or let it be
//     redelivered; with opt.Park, dedupd holds it instead, and DoInOrder
//     returns with Parked set (a server without park mode: an error
//     matching ErrParkUnsupported);
//   - while another caller holds the stream it waits, up to MaxWait, then
//     returns ErrInProgressTimeout;
//   - once it holds the lease it runs opt.Settle, if set, and then fn with
//     the fencing token unless Settle found the effect; success completes
//     seq, an error made with Terminal rejects it as poison (the stream
//     moves past it) and returns a *RejectedError, an error whose outcome
//     is unknown (as in Do: Settle failed, a timeout, a cancellation)
//     leaves the claim PENDING and returns an *UnknownOutcomeError, any
//     other error releases the claim and is returned as it is;
//   - with opt.Park, a completion (or rejection) that hands back the next
//     parked event runs opt.Released on it at once, and so on in order
//     (see ReleasedChain; without Park such an event is released for
//     DoParked).
func (c *Client) DoInOrder(ctx context.Context, consumer, stream string, seq int64, opt InOrderOptions,
	fn func(ctx context.Context, token int64) error) (InOrderResult, error) {
	if opt.Park && opt.Released == nil {
		return InOrderResult{}, fmt.Errorf("%w: DoInOrder with Park needs Released, to run the parked events it gets back", ErrInvalidArgument)
	}
	claim, err := c.claimStreamOrWait(ctx, consumer, stream, seq, opt)
	acquired := time.Now()
	switch {
	case err != nil && opt.Park && errors.Is(err, ErrSequenceGap):
		return InOrderResult{}, fmt.Errorf("%w: %w", ErrParkUnsupported, err)
	case err != nil:
		return InOrderResult{}, err
	case claim.Outcome == StreamDuplicate:
		return InOrderResult{Duplicate: true, Stream: claim.Stream}, nil
	case claim.Outcome == StreamParked:
		return InOrderResult{Parked: true, Stream: claim.Stream}, nil
	}
	return c.runInOrder(ctx, consumer, heldEvent{stream: stream, seq: seq, token: claim.FencingToken,
		at: claim.Stream, leaseEnd: acquired.Add(streamLeaseSpan(claim.Stream, opt.LeaseTTL))}, opt, fn)
}

// settleStream adapts a StreamSettleFunc to runAttempt, which runs it on
// every acquisition.
func settleStream(settle StreamSettleFunc) SettleFunc {
	if settle == nil {
		return nil
	}
	return func(ctx context.Context, a Attempt) ([]byte, bool, error) {
		found, err := settle(ctx, a.FencingToken)
		return nil, found, err
	}
}

// claimStreamOrWait claims until the claim acquires, is a duplicate, or
// fails; it waits out other holders' leases up to opt.MaxWait: on the
// server (each claim asks it to wait for what is left), and with backoff
// polling when a claim comes back IN_PROGRESS early (a server without
// waiting, or past its bounds).
func (c *Client) claimStreamOrWait(ctx context.Context, consumer, stream string, seq int64, opt InOrderOptions) (StreamClaimResult, error) {
	maxWait := opt.MaxWait
	if maxWait == 0 {
		maxWait = defaultMaxWait
	}
	deadline := time.Now().Add(maxWait)
	backoff := firstWaitBackoff
	for {
		claim, err := c.ClaimStream(ctx, consumer, stream, seq, StreamClaimOptions{
			LeaseTTL: opt.LeaseTTL, Owner: opt.Owner, Mode: opt.Mode, Digest: opt.Digest,
			Wait: time.Until(deadline), Park: opt.Park, Payload: opt.Payload})
		if err != nil || claim.Outcome != StreamInProgress {
			return claim, err
		}
		wait := min(jitter(backoff), claim.RetryAfter)
		if maxWait < 0 || time.Now().Add(wait).After(deadline) {
			return claim, ErrInProgressTimeout
		}
		if err := sleep(ctx, wait); err != nil {
			return claim, err
		}
		backoff = min(2*backoff, maxWaitBackoff)
	}
}
