package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// ErrorDomain is the ErrorInfo domain of dedupd's errors.
const ErrorDomain = "dedup.v1"

// The errors a call can end in, matched with errors.Is. A server refusal is
// an *Error that matches the sentinel of its ErrorInfo reason.
var (
	// ErrDigestMismatch: the key is bound to a request with other content
	// (reason DIGEST_MISMATCH). The stored record is in Error.Record.
	ErrDigestMismatch = errors.New("dedup: digest differs from the one stored for this key")
	// ErrLeaseLost: the fencing token is no longer the key's current one
	// (reason LEASE_LOST), or Do saw its lease run out.
	ErrLeaseLost = errors.New("dedup: lease lost")
	// ErrAlreadyFinished: the key already has another terminal outcome
	// (reason ALREADY_FINISHED).
	ErrAlreadyFinished = errors.New("dedup: key already has a different outcome")
	// ErrNotFound: the key has no live record (reason RECORD_NOT_FOUND).
	ErrNotFound = errors.New("dedup: no record for this key")
	// ErrInvalidArgument: the request broke a field rule (INVALID_FIELD,
	// MALFORMED_REQUEST); Error.Field names the field.
	ErrInvalidArgument = errors.New("dedup: invalid request")
	// ErrUnavailable: the server or its store could not be reached, even
	// after the client's retries.
	ErrUnavailable = errors.New("dedup: unavailable")
	// ErrUnauthenticated: the call carried no credential, or one the
	// server does not know (reason UNAUTHENTICATED): check WithBearerToken
	// or the client certificate.
	ErrUnauthenticated = errors.New("dedup: unauthenticated")
	// ErrPermissionDenied: the credential is known but does not cover the
	// call's consumer, or is not an admin one for AdminService (reason
	// PERMISSION_DENIED).
	ErrPermissionDenied = errors.New("dedup: permission denied")
	// ErrInProgressTimeout: Do waited for another holder of the key for as
	// long as it was allowed to. The error is an *InProgressError.
	ErrInProgressTimeout = errors.New("dedup: still in progress after waiting")
	// ErrRejected: Do's key holds a terminal rejection, fresh or replayed.
	// The error is a *RejectedError.
	ErrRejected = errors.New("dedup: rejected")
)

// reasonErrors maps ErrorInfo reasons to sentinels. The reasons come from
// the proto enum dedup.v1.ErrorReason, the one list the server sends from
// (a value's name is its wire string).
var reasonErrors = map[string]error{
	dedupv1.ErrorReason_DIGEST_MISMATCH.String():   ErrDigestMismatch,
	dedupv1.ErrorReason_LEASE_LOST.String():        ErrLeaseLost,
	dedupv1.ErrorReason_ALREADY_FINISHED.String():  ErrAlreadyFinished,
	dedupv1.ErrorReason_RECORD_NOT_FOUND.String():  ErrNotFound,
	dedupv1.ErrorReason_INVALID_FIELD.String():     ErrInvalidArgument,
	dedupv1.ErrorReason_MALFORMED_REQUEST.String(): ErrInvalidArgument,
	dedupv1.ErrorReason_STORE_UNAVAILABLE.String(): ErrUnavailable,
	dedupv1.ErrorReason_UNAUTHENTICATED.String():   ErrUnauthenticated,
	dedupv1.ErrorReason_PERMISSION_DENIED.String(): ErrPermissionDenied,
	// Streams (streams.go).
	dedupv1.ErrorReason_SEQUENCE_GAP.String():         ErrSequenceGap,
	dedupv1.ErrorReason_STREAM_MODE_MISMATCH.String(): ErrStreamModeMismatch,
	dedupv1.ErrorReason_STREAM_NOT_FOUND.String():     ErrStreamNotFound,
	dedupv1.ErrorReason_PARK_FULL.String():            ErrParkFull,
}

// reasonsByCode are the reasons with no sentinel of their own, each with
// the decision of how a caller sees it: Error.Is matches them through
// their gRPC code, and Error.Reason names them. A reason the server can
// send must be in reasonErrors or here (a test holds every value of the
// enum to that).
var reasonsByCode = map[string]string{
	dedupv1.ErrorReason_POLICY_NOT_FOUND.String():  "AdminService only (NOT_FOUND); dedupctl reports it",
	dedupv1.ErrorReason_DEADLINE_EXCEEDED.String(): "matches context.DeadlineExceeded through its code",
	dedupv1.ErrorReason_CANCELED.String():          "matches context.Canceled through its code",
	dedupv1.ErrorReason_INTERNAL.String():          "a server bug; nothing to branch on",
	dedupv1.ErrorReason_RATE_LIMITED.String():      "RESOURCE_EXHAUSTED with RetryInfo; Error.Reason names it",
	dedupv1.ErrorReason_OVERLOADED.String():        "RESOURCE_EXHAUSTED with RetryInfo; Error.Reason names it",
	dedupv1.ErrorReason_NO_GAP.String():            "StreamAdminService.SkipGap only (FAILED_PRECONDITION); Error.Reason names it",
}

// Error is a call refused by the server (or by gRPC on its way there). It
// keeps the gRPC status and what dedupd attaches to it.
type Error struct {
	// Code and Message are the gRPC status code and message.
	Code    codes.Code
	Message string
	// Reason is the ErrorInfo reason, such as "LEASE_LOST"; empty when the
	// status carried no ErrorInfo (e.g. a transport error).
	Reason string
	// Metadata is the ErrorInfo metadata (consumer, key, field, state, ...).
	Metadata map[string]string
	// Field is the offending field of an INVALID_FIELD error.
	Field string
	// Record is the stored record a conflict was with (DIGEST_MISMATCH,
	// LEASE_LOST, ALREADY_FINISHED), nil otherwise.
	Record *dedupv1.Record
	// Stream is the stored stream a stream refusal was about
	// (SEQUENCE_GAP, STREAM_MODE_MISMATCH, LEASE_LOST, ...), nil otherwise.
	Stream *dedupv1.Stream

	status *status.Status
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("dedup: %s: %s (%s)", e.Code, e.Message, e.Reason)
	}
	return fmt.Sprintf("dedup: %s: %s", e.Code, e.Message)
}

// Is matches the sentinel of the error's reason, or of its code when the
// reason is unknown: UNAVAILABLE is ErrUnavailable whoever said it, and
// CANCELLED / DEADLINE_EXCEEDED match the context errors.
func (e *Error) Is(target error) bool {
	if sentinel, ok := reasonErrors[e.Reason]; ok && sentinel == target {
		return true
	}
	switch e.Code {
	case codes.Unavailable:
		return target == ErrUnavailable
	case codes.InvalidArgument:
		return target == ErrInvalidArgument
	case codes.Unauthenticated:
		return target == ErrUnauthenticated
	case codes.PermissionDenied:
		return target == ErrPermissionDenied
	case codes.Canceled:
		return target == context.Canceled
	case codes.DeadlineExceeded:
		return target == context.DeadlineExceeded
	}
	return false
}

// GRPCStatus lets status.FromError and status.Code see the original status.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// fromStatus turns an RPC error into an *Error.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	e := &Error{Code: s.Code(), Message: s.Message(), status: s}
	for _, d := range s.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() == ErrorDomain {
				e.Reason, e.Metadata = d.GetReason(), d.GetMetadata()
				e.Field = d.GetMetadata()["field"]
			}
		case *dedupv1.Record:
			e.Record = d
		case *dedupv1.Stream:
			e.Stream = d
		}
	}
	return e
}

// InProgressError is Do giving up on a key that another caller holds.
type InProgressError struct {
	// Record is the record as last seen: its owner and lease_expires_at say
	// who holds the key and until when.
	Record *dedupv1.Record
	// Claims is how many claims Do made before giving up.
	Claims int
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("dedup: key %q of %q still in progress (owner %q) after %d claims",
		e.Record.GetKey(), e.Record.GetConsumer(), e.Record.GetOwner(), e.Claims)
}

func (e *InProgressError) Is(target error) bool { return target == ErrInProgressTimeout }

// RejectedError is a key that holds a terminal rejection: either fn just
// returned a Terminal error (Replayed false, Cause is fn's error), or a
// previous attempt did (Replayed true).
type RejectedError struct {
	Rejection Rejection
	Record    *dedupv1.Record
	Replayed  bool
	Cause     error
}

func (e *RejectedError) Error() string {
	replay := ""
	if e.Replayed {
		replay = " (replayed)"
	}
	return fmt.Sprintf("dedup: rejected%s: %s: %s", replay, e.Rejection.Reason, e.Rejection.Message)
}

func (e *RejectedError) Is(target error) bool { return target == ErrRejected }
func (e *RejectedError) Unwrap() error        { return e.Cause }

// FailureError is what fn returns to choose how Do records its failure.
// Build it with Terminal or Retryable; a plain error counts as retryable.
type FailureError struct {
	Rejection Rejection
	Err       error
}

func (e *FailureError) Error() string {
	kind := "terminal"
	if e.Rejection.Retryable {
		kind = "retryable"
	}
	if e.Err != nil {
		return fmt.Sprintf("%s failure %s: %v", kind, e.Rejection.Reason, e.Err)
	}
	return fmt.Sprintf("%s failure %s: %s", kind, e.Rejection.Reason, e.Rejection.Message)
}

func (e *FailureError) Unwrap() error { return e.Err }

// Terminal marks a failure that must never be retried: Do stores it as the
// key's rejection, and every later claim replays it. reason is a short
// machine-readable code ("OUT_OF_STOCK"); the message is err's text.
func Terminal(reason string, err error, detail []byte) error {
	return &FailureError{Rejection: Rejection{Reason: reason, Message: errText(err), Detail: detail}, Err: err}
}

// Retryable marks a failure worth trying again: Do releases the key, so the
// next delivery runs fn again. A plain error from fn is treated the same.
func Retryable(reason string, err error) error {
	return &FailureError{Rejection: Rejection{Reason: reason, Message: errText(err), Retryable: true}, Err: err}
}

// Unknown marks a failure whose effect may or may not have happened, such
// as an HTTP upstream that broke the connection after the request was
// sent: Do records nothing, exactly as for a timeout, and the claim stays
// PENDING until its lease runs out (then the next acquisition runs
// Settle). Do returns it as an *UnknownOutcomeError.
func Unknown(err error) error { return &unknownMarkError{err: err} }

type unknownMarkError struct{ err error }

func (e *unknownMarkError) Error() string { return "outcome unknown: " + errText(e.err) }
func (e *unknownMarkError) Unwrap() error { return e.err }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
