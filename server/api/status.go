package api

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// UnavailableMessage is all a caller is told of a store that does not
// answer: the cause (a driver's error, naming the database user, name and
// address) is logged, never sent.
const UnavailableMessage = "store unavailable; retry"

// wireClass is how one of the store's refusals appears on the wire.
type wireClass struct {
	code   codes.Code
	reason string
}

// refusalClasses maps each refusal of the store contract (store.Refused,
// the one list of them) to its code and reason; a test holds that it maps
// every one. The caller is told the sentinel's fixed text: a store's own
// error text may carry its details.
var refusalClasses = map[error]wireClass{
	store.ErrStreamNotFound:  {codes.NotFound, rpcerrors.ReasonStreamNotFound},
	store.ErrNotFound:        {codes.NotFound, rpcerrors.ReasonNotFound},
	store.ErrSequenceGap:     {codes.FailedPrecondition, rpcerrors.ReasonSequenceGap},
	store.ErrModeMismatch:    {codes.FailedPrecondition, rpcerrors.ReasonStreamModeMismatch},
	store.ErrParkFull:        {codes.ResourceExhausted, rpcerrors.ReasonParkFull},
	store.ErrNoGap:           {codes.FailedPrecondition, rpcerrors.ReasonNoGap},
	store.ErrNoPolicy:        {codes.NotFound, rpcerrors.ReasonPolicyNotFound},
	store.ErrDigestMismatch:  {codes.FailedPrecondition, rpcerrors.ReasonDigestMismatch},
	store.ErrAlreadyFinished: {codes.FailedPrecondition, rpcerrors.ReasonAlreadyFinished},
	store.ErrLeaseLost:       {codes.Aborted, rpcerrors.ReasonLeaseLost},
}

// wireStatus is the status of any error a handler meets: a store refusal
// by its class, with the stored record or stream for a conflict; a store
// outage as UNAVAILABLE with UnavailableMessage; anything else by
// rpcerrors.Status, which makes what it does not know INTERNAL. consumer
// and key, when known, go into the ErrorInfo metadata, where
// rpcerrors.New cuts every value once.
func wireStatus(err error, consumer, key string) *status.Status {
	refusal, refused := store.Refused(err)
	switch {
	case refused:
		return refusalStatus(err, refusal, rpcerrors.Metadata(consumer, key))
	case errors.Is(err, store.ErrUnavailable):
		return rpcerrors.New(codes.Unavailable, rpcerrors.ReasonStoreUnavailable, UnavailableMessage, rpcerrors.Metadata(consumer, key))
	}
	return rpcerrors.Status(err, consumer, key)
}

// refusalStatus is the status of a store refusal. A conflict of none of
// the mapped sentinels is a bug: INTERNAL, still with what it conflicted
// with.
func refusalStatus(err error, r store.Refusal, meta map[string]string) *status.Status {
	class, known := refusalClasses[r.Err]
	msg := "internal error"
	if known {
		msg = r.Err.Error()
	} else {
		class = wireClass{codes.Internal, rpcerrors.ReasonInternal}
	}
	if c, ok := errors.AsType[*store.StreamConflictError](err); ok {
		return streamConflictStatus(err, c, class, meta)
	}
	if c, ok := errors.AsType[*store.ConflictError](err); ok {
		// The consumer and key are in the metadata and the record; the
		// message leaves them out, since it is also what the call's log
		// line says, and keys are never logged.
		meta["state"] = string(c.Record.State)
		meta["fencing_token"] = strconv.FormatInt(c.Record.FencingToken, 10)
		msg = fmt.Sprintf("%s (state %s, fencing token %d)", msg, c.Record.State, c.Record.FencingToken)
		return rpcerrors.New(class.code, class.reason, msg, meta, recordpb.FromStore(c.Record))
	}
	if errors.Is(r.Err, store.ErrLeaseLost) {
		// A lease lost with no record to show is a key that has none: the
		// code and reason stay (clients match on them), the message and
		// metadata say so, since "not the current lease" sends a reader
		// looking for a competing holder that does not exist.
		meta[rpcerrors.MetaRecord] = rpcerrors.RecordNone
		msg += NoRecordMessage
	}
	return rpcerrors.New(class.code, class.reason, msg, meta)
}

// NoRecordMessage ends the message of a LEASE_LOST for a key with no
// record.
const NoRecordMessage = ": no record exists for it (never claimed, or expired or deleted)"

// streamConflictStatus is the status of a refusal caused by a stored
// stream: the stream rides along as a detail, and its id, mark and mode
// (and, for a gap, the expected sequence) in the metadata, put in whole
// for rpcerrors.New to cut.
func streamConflictStatus(err error, c *store.StreamConflictError, class wireClass, meta map[string]string) *status.Status {
	meta["stream"] = c.Stream.Stream
	meta["high_water"] = strconv.FormatInt(c.Stream.HighWater, 10)
	meta["mode"] = string(c.Stream.Mode)
	meta["fencing_token"] = strconv.FormatInt(c.Stream.FencingToken, 10)
	if errors.Is(err, store.ErrSequenceGap) {
		meta[rpcerrors.MetaExpectedSequence] = strconv.FormatInt(c.Expected, 10)
	}
	return rpcerrors.New(class.code, class.reason, err.Error(), meta, recordpb.StreamFromStore(c.Stream))
}
