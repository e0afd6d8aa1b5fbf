'use strict';
// Typed errors for dedupd calls, built from the server's google.rpc.Status
// (trailing metadata "grpc-status-details-bin"): the ErrorInfo reason
// (domain "dedup.v1") picks the class; the stored dedup.v1.Record, when the
// server attached one, is err.record.

const { status: Code } = require('@grpc/grpc-js');
const { Record, Stream, Status, ErrorInfo, OBJECT_OPTIONS, REASONS } = require('./proto');

const ERROR_DOMAIN = 'dedup.v1';
const RECORD_TYPE_URL = 'type.googleapis.com/dedup.v1.Record';
const STREAM_TYPE_URL = 'type.googleapis.com/dedup.v1.Stream';
const ERROR_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.ErrorInfo';

/**
 * An error answered by dedupd (or by gRPC on the way). code is the gRPC
 * status code (number), reason the ErrorInfo reason ('' when none, e.g.
 * UNIMPLEMENTED), metadata the ErrorInfo metadata, record the stored record
 * or null, stream the stored stream (stream refusals) or null.
 */
class DedupError extends Error {
  constructor(message, { code = null, reason = '', metadata = {}, record = null, stream = null, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = this.constructor.name;
    this.code = code;
    this.reason = reason;
    this.metadata = metadata;
    this.record = record;
    this.stream = stream;
  }
}

/** Same key, other content: err.record is the stored record. */
class DigestMismatch extends DedupError {}
/** The fencing token is no longer current (taken over, or released). */
class LeaseLost extends DedupError {}
/** The key already has another terminal outcome. */
class AlreadyFinished extends DedupError {}
/** Lookup of a key with no live record. */
class RecordNotFound extends DedupError {}
/** A field broke the API's limits (metadata.field names it), or the request did not decode. */
class InvalidRequest extends DedupError {}
/** The server or its store could not be reached; nothing changed. */
class Unavailable extends DedupError {}
/** No credential, or one dedupd does not know: check the token (token option or DEDUPD_TOKEN) or the client certificate. */
class Unauthenticated extends DedupError {}
/** A known credential that does not cover the call's consumer. */
class PermissionDenied extends DedupError {}
/**
 * A dense stream was claimed past the sequence it expects next
 * (SEQUENCE_GAP): hold the event back until err.expected is processed, or
 * let it be redelivered.
 */
class SequenceGap extends DedupError {
  /** The sequence the stream accepts next, as a decimal string. */
  get expected() {
    return this.metadata.expected_sequence || '0';
  }
}
/** The claim named another mode than the stream's or its consumer's stream policy (STREAM_MODE_MISMATCH). */
class StreamModeMismatch extends DedupError {}
/** getStream of a stream with no live record (STREAM_NOT_FOUND). */
class StreamNotFound extends DedupError {}
/** A claim with park found no room (PARK_FULL): nothing stored; let the message be redelivered. */
class ParkFull extends DedupError {}
/** doInOrder({park: true}) was answered SEQUENCE_GAP: the server does not know park mode. cause is the SequenceGap. */
class ParkUnsupported extends DedupError {}
/** dedup.do() waited its bound while another caller held the key; err.record is the last seen. */
class InProgressTimeout extends DedupError {}

/**
 * The call's signal was aborted: before it was sent (nothing reached the
 * server), or while it was in flight (the call was cancelled; the server may
 * or may not have done it). name is 'AbortError', as for fetch and Node's
 * own APIs; code is CANCELLED; cause is the signal's reason.
 */
class AbortError extends DedupError {
  constructor(reason) {
    super('CANCELLED: the call\'s signal was aborted', { code: Code.CANCELLED, cause: reason });
  }
}

/**
 * The key's outcome is a terminal rejection: fresh (fn threw Terminal;
 * replayed false) or stored earlier (replayed true). err.rejection holds
 * reason, message and detail.
 */
class Rejected extends DedupError {
  constructor(record, replayed, cause) {
    super(`rejected: ${record.rejection.reason}: ${record.rejection.message}`, { reason: 'REJECTED', record, cause });
    this.replayed = replayed;
    this.rejection = record.rejection;
  }
}

/**
 * The ErrorInfo reasons, by name: Reason.DIGEST_MISMATCH is
 * 'DIGEST_MISMATCH', as err.reason carries it. Read from
 * proto/dedup/v1/error_reason.proto, the list the server sends from.
 */
const Reason = Object.freeze(Object.fromEntries(REASONS.map((name) => [name, name])));

// The class of each reason. Every reason the proto lists has an entry, so
// that a new reason is a decision here (a test checks); DedupError is the
// answer for reasons a caller handles by err.code and err.reason alone.
const CLASS_BY_REASON = {
  INVALID_FIELD: InvalidRequest,
  MALFORMED_REQUEST: InvalidRequest,
  RECORD_NOT_FOUND: RecordNotFound,
  POLICY_NOT_FOUND: DedupError, // the admin service's; this client does not call it
  DIGEST_MISMATCH: DigestMismatch,
  ALREADY_FINISHED: AlreadyFinished,
  LEASE_LOST: LeaseLost,
  STORE_UNAVAILABLE: Unavailable,
  DEADLINE_EXCEEDED: DedupError,
  CANCELED: DedupError,
  INTERNAL: DedupError,
  UNAUTHENTICATED: Unauthenticated,
  PERMISSION_DENIED: PermissionDenied,
  RATE_LIMITED: DedupError,
  OVERLOADED: DedupError,
  SEQUENCE_GAP: SequenceGap,
  STREAM_MODE_MISMATCH: StreamModeMismatch,
  STREAM_NOT_FOUND: StreamNotFound,
  PARK_FULL: ParkFull,
  NO_GAP: DedupError, // the stream admin service's; this client does not call it
};
for (const name of Object.keys(CLASS_BY_REASON)) {
  if (!(name in Reason)) throw new Error(`errors.js maps ${name}, which error_reason.proto does not list`);
}

// Codes whose meaning does not depend on who answered (dedupd or a proxy in
// front of it), for errors without a dedupd ErrorInfo.
const BY_CODE = {
  [Code.UNAVAILABLE]: Unavailable,
  [Code.UNAUTHENTICATED]: Unauthenticated,
  [Code.PERMISSION_DENIED]: PermissionDenied,
};

/** Converts a @grpc/grpc-js ServiceError into the matching DedupError. */
function fromServiceError(err) {
  const raw = err.metadata ? err.metadata.get('grpc-status-details-bin') : [];
  const details = raw.flatMap((bytes) => Status.decode(bytes).details);
  return toError(err.code, err.details || err.message, details, err);
}

/**
 * Converts a google.rpc.Status object ({code, message, details}), such as one
 * batch item's error, into the DedupError its lone call would have thrown.
 */
function fromStatus(status) {
  return toError(status.code, status.message, status.details || [], undefined);
}

function toError(code, message, details, cause) {
  let reason = '';
  let metadata = {};
  let record = null;
  let stream = null;
  for (const detail of details) {
    // protobufjs decodes Any as typeUrl; proto-loader's objects keep type_url.
    const typeUrl = detail.typeUrl || detail.type_url;
    if (typeUrl === ERROR_INFO_TYPE_URL) {
      const info = ErrorInfo.toObject(ErrorInfo.decode(detail.value), { defaults: true });
      if (info.domain === ERROR_DOMAIN) ({ reason, metadata } = info);
    } else if (typeUrl === RECORD_TYPE_URL) {
      record = Record.toObject(Record.decode(detail.value), OBJECT_OPTIONS);
    } else if (typeUrl === STREAM_TYPE_URL) {
      stream = Stream.toObject(Stream.decode(detail.value), OBJECT_OPTIONS);
    }
  }
  // A reason this copy of the client does not know (a newer server) falls
  // back to the code.
  const Class = Object.hasOwn(CLASS_BY_REASON, reason) ? CLASS_BY_REASON[reason] : (BY_CODE[code] || DedupError);
  const label = reason || Code[code] || 'ERROR';
  return new Class(`${label}: ${message}`, { code, reason, metadata, record, stream, cause });
}

module.exports = {
  ERROR_DOMAIN, Reason, CLASS_BY_REASON, DedupError, DigestMismatch, LeaseLost, AlreadyFinished, RecordNotFound,
  InvalidRequest, Unavailable, Unauthenticated, PermissionDenied, InProgressTimeout, Rejected, AbortError,
  SequenceGap, StreamModeMismatch, StreamNotFound, ParkFull, ParkUnsupported, fromServiceError, fromStatus,
};
