// Package rpcerrors is dedupd's error vocabulary on the wire: the ErrorInfo
// domain and reasons, the sentinels the server's interceptors refuse calls
// with, RetryAfterError, FieldError, New (the one builder of a status with
// its ErrorInfo, every echoed value cut once) and Status, the mapping of
// those errors to gRPC statuses.
//
// It is a leaf: it imports nothing of this module but internal/clip, so
// that handlers (server/api) and interceptors (server/auth, server/throttle,
// server/metrics) can all import it. The map from the store's errors to
// statuses is the handlers' (server/api), which know the store; a depguard
// rule (.golangci.yaml) keeps it so.
//
// The reasons are listed once for every language, as the enum ErrorReason
// in proto/dedup/v1/error_reason.proto; a value's name is its wire string.
// The constants here are the server's side of that list (a test keeps the
// two equal).
package rpcerrors

import (
	"context"
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/clip"
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
	// ReasonParkFull and ReasonNoGap are park mode's refusals.
	ReasonParkFull = "PARK_FULL"
	ReasonNoGap    = "NO_GAP"
)

// Reasons lists every reason above: the set the server can send, which a
// test holds equal to the proto enum ErrorReason.
var Reasons = []string{
	ReasonInvalidField, ReasonMalformedRequest, ReasonNotFound, ReasonPolicyNotFound,
	ReasonDigestMismatch, ReasonAlreadyFinished, ReasonLeaseLost, ReasonStoreUnavailable,
	ReasonDeadlineExceeded, ReasonCanceled, ReasonInternal,
	ReasonUnauthenticated, ReasonPermissionDenied, ReasonRateLimited, ReasonOverloaded,
	ReasonSequenceGap, ReasonStreamModeMismatch, ReasonStreamNotFound,
	ReasonParkFull, ReasonNoGap,
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

// MetaExpectedSequence is the ErrorInfo metadata key of a SEQUENCE_GAP: the
// sequence the stream expects next.
const MetaExpectedSequence = "expected_sequence"

// MetaRecord is the ErrorInfo metadata key that says, on a LEASE_LOST
// with no stored record to show, that the key has none (RecordNone): it
// was never claimed, or its record expired or was deleted.
const (
	MetaRecord = "record"
	RecordNone = "none"
)

// errorClass is how one kind of error appears on the wire. A class with a
// message sends that fixed text instead of the error's own, which may carry
// a store's details.
type errorClass struct {
	sentinel error
	code     codes.Code
	reason   string
	message  string
}

// errorClasses maps the errors of this vocabulary, and a context's, to
// gRPC codes. The first match wins.
var errorClasses = []errorClass{
	{ErrMalformedRequest, codes.InvalidArgument, ReasonMalformedRequest, ""},
	{context.DeadlineExceeded, codes.DeadlineExceeded, ReasonDeadlineExceeded, context.DeadlineExceeded.Error()},
	{context.Canceled, codes.Canceled, ReasonCanceled, context.Canceled.Error()},
	// The interceptors' refusals say what to do in their own words, which
	// hold no store detail.
	{ErrUnauthenticated, codes.Unauthenticated, ReasonUnauthenticated, ""},
	{ErrPermissionDenied, codes.PermissionDenied, ReasonPermissionDenied, ""},
	{ErrRateLimited, codes.ResourceExhausted, ReasonRateLimited, ""},
	{ErrOverloaded, codes.ResourceExhausted, ReasonOverloaded, ""},
}

// Status converts an error of this vocabulary into a gRPC status carrying a
// google.rpc.ErrorInfo, plus a BadRequest for an invalid field and a
// RetryInfo for a RetryAfterError. consumer and key, when known, go into
// the metadata. Errors it does not know become INTERNAL, without their
// text: only bugs should end up there, and their cause is for the log.
// (The store's errors are mapped by server/api, which falls back on this.)
func Status(err error, consumer, key string) *status.Status {
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s // already a status, e.g. from an interceptor
	}
	meta := Metadata(consumer, key)
	if fieldErr, ok := errors.AsType[*FieldError](err); ok {
		meta["field"] = fieldErr.Field
		return New(codes.InvalidArgument, ReasonInvalidField, err.Error(), meta,
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
				{Field: clip.String(fieldErr.Field, clip.MaxEchoed), Description: clip.String(fieldErr.Problem, clip.MaxEchoed)},
			}})
	}
	class := errorClass{code: codes.Internal, reason: ReasonInternal, message: "internal error"} // the cause is logged, not sent
	for _, c := range errorClasses {
		if errors.Is(err, c.sentinel) {
			class = c
			break
		}
	}
	msg := class.message
	if msg == "" {
		msg = err.Error()
	}
	if retry, ok := errors.AsType[*RetryAfterError](err); ok {
		return New(class.code, class.reason, msg, meta, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry.After)})
	}
	return New(class.code, class.reason, msg, meta)
}

// Metadata is the ErrorInfo metadata naming the consumer and key of a call,
// each when known.
func Metadata(consumer, key string) map[string]string {
	meta := map[string]string{}
	if consumer != "" {
		meta["consumer"] = consumer
	}
	if key != "" {
		meta["key"] = key
	}
	return meta
}

// New builds a status with an ErrorInfo of reason, the domain and meta,
// then extra details. It is where every echoed value (the message and each
// metadata value) is cut, once, to clip.MaxEchoed and made valid UTF-8:
// protobuf refuses to marshal a string that is not, and would then drop
// every detail, though the reason must survive. Callers put values in
// whole.
func New(code codes.Code, reason, msg string, meta map[string]string, extra ...protoadapt.MessageV1) *status.Status {
	s := status.New(code, clip.String(msg, clip.MaxEchoed))
	for k, v := range meta {
		meta[k] = clip.String(v, clip.MaxEchoed)
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
