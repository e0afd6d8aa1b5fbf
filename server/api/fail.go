package api

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/loglimit"
	"github.com/dedupd/dedupd/server/store"
)

// target is what a failed call was about, for its answer and its log line.
type target struct {
	consumer string
	// key is a key call's key: echoed to the caller, never logged
	// (docs/operations.md).
	key string
	// stream is a stream call's stream id, when it names one: logged, cut.
	stream string
	// streams is set for the stream services, where a missing record is a
	// missing stream.
	streams bool
}

func keyCall(consumer, key string) target { return target{consumer: consumer, key: key} }

func streamCall(consumer, stream string) target {
	return target{consumer: consumer, stream: stream, streams: true}
}

// failWith is the one failure path of every handler, key and stream calls
// alike: the status the caller sees for err (callStatus), and a log line with
// the cause the caller is not told (logCause). Batch items take the same
// two steps (itemError).
//
// A refusal's stored record leaves out what the caller stored (result,
// rejection message and detail, as a lean batch item does) when that is
// more than MaxRefusalPayloadBytes: a unary error's details travel in a
// trailer, and gRPC's C core (the Python client) refuses one past 8 KiB by
// default, which turned DIGEST_MISMATCH on a record with a 20 KB result
// into INTERNAL: RST_STREAM. Lookup gives the whole record.
func failWith(ctx context.Context, log *slog.Logger, err error, t target) error {
	if conflict, ok := errors.AsType[*store.ConflictError](err); ok && payloadBytes(conflict.Record) > MaxRefusalPayloadBytes {
		err = &store.ConflictError{Err: conflict.Err, Record: withoutPayload(conflict.Record)}
	}
	st := callStatus(err, t)
	logCause(ctx, log, st.Code(), err, t)
	return st.Err()
}

// callStatus is the status of err (wireStatus); on the stream services a
// missing record is a missing stream.
func callStatus(err error, t target) *status.Status {
	if t.streams && errors.Is(err, store.ErrNotFound) {
		err = store.ErrStreamNotFound
	}
	return wireStatus(err, t.consumer, t.key)
}

// logCause logs what the caller of a call that ended with code was not
// told: an internal error (a bug) at ERROR, a store that does not answer at
// WARN, rate-limited. Every value is cut (clip): the consumer and stream to
// clip.MaxLogged, the cause to clip.MaxEchoed, enough for a driver's
// message. Other codes are answers; the access log has their lines.
func logCause(ctx context.Context, log *slog.Logger, code codes.Code, err error, t target) {
	switch code {
	case codes.Internal:
		log.ErrorContext(ctx, "internal error", t.logAttrs(err)...)
	case codes.Unavailable:
		logStoreUnavailable(ctx, log, err, t)
	}
}

// logAttrs are the fields of a failure's line: never the key.
func (t target) logAttrs(err error, more ...any) []any {
	attrs := []any{"consumer", clip.String(t.consumer, clip.MaxLogged)}
	if t.stream != "" {
		attrs = append(attrs, "stream", clip.String(t.stream, clip.MaxLogged))
	}
	return append(append(attrs, "err", clip.String(err.Error(), clip.MaxEchoed)), more...)
}

// unavailableLines rate-limits the lines of logStoreUnavailable as the
// access log limits failed calls: an outage fails every call, key and
// stream calls alike, and one line a second (after 10 at once) says as
// much as thousands.
var unavailableLines = loglimit.New(1, 10)

// logStoreUnavailable logs why the store did not answer; the caller was
// told only UnavailableMessage. A line after a gap counts the lines left
// out since the last one (dropped).
func logStoreUnavailable(ctx context.Context, log *slog.Logger, err error, t target) {
	ok, dropped := unavailableLines.Allow(loglimit.Key{What: "store unavailable", Code: codes.Unavailable})
	if !ok {
		return
	}
	log.WarnContext(ctx, "store unavailable", t.logAttrs(err, "dropped", dropped)...)
}
