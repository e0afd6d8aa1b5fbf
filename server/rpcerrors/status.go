// Package rpcerrors is dedupd's error vocabulary on the wire: the ErrorInfo
// domain and reasons, the sentinels the server's interceptors refuse calls
// with, RetryAfterError, FieldError, and Status, the one mapping from an
// error to a gRPC status. It is a leaf: handlers (server/api) and
// interceptors (server/auth, server/throttle, server/metrics) both import
// it, and it imports neither.
//
// The reasons are listed once for every language, as the enum ErrorReason
// in proto/dedup/v1/error_reason.proto; a value's name is its wire string.
// The constants here are the server's side of that list (a test keeps the
// two equal).
package rpcerrors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// ErrorDomain is the ErrorInfo domain of every error dedupd returns.
const ErrorDomain = "dedup.v1"

// The ErrorInfo reasons dedupd returns. They are part of the API: clients
// branch on them, so they never change meaning. Each is the name of a value
// of the proto enum dedup.v1.ErrorReason; a new reason goes there first.
const (
	ReasonInvalidField     = "INVALID_FIELD"
	ReasonMalformedRequest = "MALFORMED_REQUEST"
	ReasonNotFound         = "RECORD_NOT_FOUND"
	ReasonPolicyNotFound   = "POLICY_NOT_FOUND"
	ReasonDigestMismatch   = "DIGEST_MISMATCH"
	ReasonAlreadyFinished  = "ALREADY_FINISHED"
	ReasonLeaseLost        = "LEASE_LOST"
	ReasonStoreUnavailable = "STORE_UNAVAILABLE"
	ReasonDeadlineExceeded = "DEADLINE_EXCEEDED"
	ReasonCanceled         = "CANCELED"
	ReasonInternal         = "INTERNAL"

	// ReasonUnauthenticated and the reasons after it are refusals made
	// before a handler runs (server interceptors).
	ReasonUnauthenticated  = "UNAUTHENTICATED"
	ReasonPermissionDenied = "PERMISSION_DENIED"
	ReasonRateLimited      = "RATE_LIMITED"
	ReasonOverloaded       = "OVERLOADED"
	// ReasonSequenceGap and the two below are StreamService's refusals.
	ReasonSequenceGap        = "SEQUENCE_GAP"
	ReasonStreamModeMismatch = "STREAM_MODE_MISMATCH"
	ReasonStreamNotFound     = "STREAM_NOT_FOUND"
)

// Reasons lists every reason above: the set the server can send, which a
// test holds equal to the proto enum ErrorReason.
var Reasons = []string{
	ReasonInvalidField, ReasonMalformedRequest, ReasonNotFound, ReasonPolicyNotFound,
	ReasonDigestMismatch, ReasonAlreadyFinished, ReasonLeaseLost, ReasonStoreUnavailable,
	ReasonDeadlineExceeded, ReasonCanceled, ReasonInternal,
	ReasonUnauthenticated, ReasonPermissionDenied, ReasonRateLimited, ReasonOverloaded,
	ReasonSequenceGap, ReasonStreamModeMismatch, ReasonStreamNotFound,
}

// ErrMalformedRequest is a request whose bytes do not decode as its message,
// such as a nested message cut short.
var ErrMalformedRequest = errors.New("request does not decode as its message")

// Refusals of the server's interceptors. Wrap them with %w to say more; the
// message reaches the caller, so it must never carry a credential.
var (
	// ErrUnauthenticated: no credential, or one the server does not know.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: a known credential that does not cover the
	// consumer or service called.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrRateLimited: the consumer has used up its request rate.
	ErrRateLimited = errors.New("rate limited")
	// ErrOverloaded: the server is at its bound of calls in flight.
	ErrOverloaded = errors.New("server overloaded")
)

// FieldError is a request field that fails validation. Status turns it
// into INVALID_ARGUMENT with reason INVALID_FIELD, naming the field.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// RetryAfterError is a refusal worth retrying after a pause; Status adds
// the pause as a google.rpc.RetryInfo.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// MaxEchoBytes bounds each value an error repeats back to the caller: each
// ErrorInfo metadata value (consumer, key, field) and the message. It is the
// longest key a request may carry, so a valid value is echoed whole, while a
// value of megabytes cannot make the answer as large as the request (the
// details travel in a trailer, which clients refuse beyond 8 KiB or so).
const MaxEchoBytes = 512

// UnavailableMessage is all a caller is told of a store that does not
// answer: the cause (a driver's error, naming the database user, name and
// address) is logged, never sent.
const UnavailableMessage = "store unavailable; retry"

// errorClass is how one kind of error appears on the wire. A class with a
// message sends that fixed text instead of the error's own, which may carry
// a store's details.
type errorClass struct {
	sentinel error
	code     codes.Code
	reason   string
	message  string
}

// errorClasses is the one table from domain errors to gRPC codes. Order
// matters only in that the first match wins.
var errorClasses = []errorClass{
	{ErrMalformedRequest, codes.InvalidArgument, ReasonMalformedRequest, ""},
	{ErrStreamNotFound, codes.NotFound, ReasonStreamNotFound, ErrStreamNotFound.Error()},
	{store.ErrNotFound, codes.NotFound, ReasonNotFound, store.ErrNotFound.Error()},
	{store.ErrSequenceGap, codes.FailedPrecondition, ReasonSequenceGap, store.ErrSequenceGap.Error()},
	{store.ErrModeMismatch, codes.FailedPrecondition, ReasonStreamModeMismatch, store.ErrModeMismatch.Error()},
	{store.ErrNoPolicy, codes.NotFound, ReasonPolicyNotFound, store.ErrNoPolicy.Error()},
	{store.ErrDigestMismatch, codes.FailedPrecondition, ReasonDigestMismatch, store.ErrDigestMismatch.Error()},
	{store.ErrAlreadyFinished, codes.FailedPrecondition, ReasonAlreadyFinished, store.ErrAlreadyFinished.Error()},
	{store.ErrLeaseLost, codes.Aborted, ReasonLeaseLost, store.ErrLeaseLost.Error()},
	{store.ErrUnavailable, codes.Unavailable, ReasonStoreUnavailable, UnavailableMessage},
	{context.DeadlineExceeded, codes.DeadlineExceeded, ReasonDeadlineExceeded, context.DeadlineExceeded.Error()},
	{context.Canceled, codes.Canceled, ReasonCanceled, context.Canceled.Error()},
	// The interceptors' refusals say what to do in their own words, which
	// hold no store detail.
	{ErrUnauthenticated, codes.Unauthenticated, ReasonUnauthenticated, ""},
	{ErrPermissionDenied, codes.PermissionDenied, ReasonPermissionDenied, ""},
	{ErrRateLimited, codes.ResourceExhausted, ReasonRateLimited, ""},
	{ErrOverloaded, codes.ResourceExhausted, ReasonOverloaded, ""},
}

// Status converts any error from a handler into a gRPC status carrying a
// google.rpc.ErrorInfo, plus a BadRequest for invalid fields and the stored
// record for conflicts. consumer and key, when known, go into the metadata.
// Errors it does not know become INTERNAL: only bugs should end up there.
//
// Nothing a caller sent is repeated beyond MaxEchoBytes, and a store's
// errors reach the caller only as their class's fixed message: the cause,
// such as a driver's connect error, is for the log (see failWith in
// server/api).
func Status(err error, consumer, key string) *status.Status {
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s // already a status, e.g. from an interceptor
	}
	meta := map[string]string{}
	if consumer != "" {
		meta["consumer"] = consumer
	}
	if key != "" {
		meta["key"] = key
	}
	if fieldErr, ok := errors.AsType[*FieldError](err); ok {
		meta["field"] = fieldErr.Field
		return withDetails(codes.InvalidArgument, err.Error(), ReasonInvalidField, meta,
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
				{Field: clip.String(fieldErr.Field, MaxEchoBytes), Description: clip.String(fieldErr.Problem, MaxEchoBytes)},
			}})
	}
	class := errorClass{code: codes.Internal, reason: ReasonInternal, message: "internal error"} // the cause is logged, not sent
	for _, c := range errorClasses {
		if errors.Is(err, c.sentinel) {
			class = c
			break
		}
	}
	if streamConflict, ok := errors.AsType[*store.StreamConflictError](err); ok {
		return streamConflictStatus(err, streamConflict, class.code, class.reason, meta)
	}
	msg := class.message
	if msg == "" {
		msg = err.Error()
	}
	if conflict, ok := errors.AsType[*store.ConflictError](err); ok {
		// The consumer and key are in the metadata and the record; the
		// message leaves them out, since it is also what the call's log
		// line says, and keys are never logged.
		meta["state"] = string(conflict.Record.State)
		meta["fencing_token"] = strconv.FormatInt(conflict.Record.FencingToken, 10)
		msg = fmt.Sprintf("%s (state %s, fencing token %d)", msg, conflict.Record.State, conflict.Record.FencingToken)
		return withDetails(class.code, msg, class.reason, meta, recordpb.FromStore(conflict.Record))
	}
	if retry, ok := errors.AsType[*RetryAfterError](err); ok {
		return withDetails(class.code, msg, class.reason, meta, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry.After)})
	}
	return withDetails(class.code, msg, class.reason, meta)
}

// withDetails builds the status, each echoed value (the message and every
// metadata value) cut to MaxEchoBytes and made valid UTF-8: protobuf
// refuses to marshal a string that is not, and would then drop every
// detail, though the reason must survive.
func withDetails(code codes.Code, msg, reason string, meta map[string]string, extra ...protoadapt.MessageV1) *status.Status {
	s := status.New(code, clip.String(msg, MaxEchoBytes))
	for k, v := range meta {
		meta[k] = clip.String(v, MaxEchoBytes)
	}
	details := append([]protoadapt.MessageV1{&errdetails.ErrorInfo{
		Reason:   reason,
		Domain:   ErrorDomain,
		Metadata: meta,
	}}, extra...)
	if withInfo, err := s.WithDetails(details...); err == nil {
		return withInfo
	}
	return s
}

// Info returns the dedupd ErrorInfo (domain ErrorDomain) of a status, or
// nil when it carries none.
func Info(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return info
		}
	}
	return nil
}
