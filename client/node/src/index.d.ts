// Type declarations for @dedupd/client, written by hand beside the
// JavaScript they describe. examples/typed.ts uses every export, and
// `npm run typecheck` (tsc --noEmit, run by CI) checks it against these.
//
// Every proto int64 (fencing tokens, attempts, the seconds of timestamps and
// durations) is a decimal string: a JavaScript number holds integers exactly
// only up to 2^53. See Int64 and FencingToken.

import type { ChannelOptions, ServiceError } from '@grpc/grpc-js';
import type { Message, Root, Type } from 'protobufjs';

/** A proto int64 as the client gives it: a decimal string, e.g. '9007199254740993'. */
export type Int64 = string;

/**
 * A fencing token as the client takes it: the decimal string a claim gave, a
 * bigint, or a number that is still a safe integer. Anything else (a number
 * past 2^53, a value outside the int64 range) rejects with a TypeError
 * before any call.
 */
export type FencingToken = Int64 | bigint | number;

/** Bytes to store: a string is sent as its UTF-8 encoding. */
export type Payload = string | Uint8Array;

/** google.protobuf.Timestamp as the client gives it. */
export interface Timestamp {
  seconds: Int64;
  nanos: number;
}

/** google.protobuf.Duration as the client gives it. */
export interface Duration {
  seconds: Int64;
  nanos: number;
}

/** A Timestamp or Duration as a request field takes it. */
export interface TimeInput {
  seconds: number | Int64 | bigint;
  nanos?: number;
}

export type State = 'STATE_UNSPECIFIED' | 'STATE_PENDING' | 'STATE_COMPLETED' | 'STATE_REJECTED' | 'STATE_RELEASED';

export type Outcome = 'OUTCOME_UNSPECIFIED' | 'OUTCOME_ACQUIRED' | 'OUTCOME_IN_PROGRESS' | 'OUTCOME_COMPLETED' | 'OUTCOME_REJECTED';

/** dedup.v1.Rejection: a stored refusal, or the reason a key was released. */
export interface Rejection {
  reason: string;
  message: string;
  detail: Buffer;
  retryable: boolean;
}

/** dedup.v1.Record: everything dedupd remembers about one key. Unset messages are null. */
export interface DedupRecord {
  consumer: string;
  key: string;
  state: State;
  digest: Buffer;
  fencingToken: Int64;
  attempts: Int64;
  owner: string;
  result: Buffer;
  rejection: Rejection | null;
  createdAt: Timestamp | null;
  updatedAt: Timestamp | null;
  leaseExpiresAt: Timestamp | null;
  expiresAt: Timestamp | null;
}

/** dedup.v1.ClaimResponse. */
export interface ClaimResponse {
  outcome: Outcome;
  record: DedupRecord;
  /** Set ('0' otherwise) when outcome is OUTCOME_ACQUIRED. */
  fencingToken: Int64;
  /** Set when outcome is OUTCOME_IN_PROGRESS: how long until the lease runs out. */
  retryAfter: Duration | null;
}

/** The filters of ListRecords (dedup.v1.ListRecordsRequest without consumer). */
export interface ListRecordsFilters {
  states?: State[];
  keyPrefix?: string;
  createdAfter?: TimeInput;
  createdBefore?: TimeInput;
  updatedAfter?: TimeInput;
  updatedBefore?: TimeInput;
  /** Only PENDING records whose lease ran out: the reconciliation queue. */
  leaseExpired?: boolean;
  pageSize?: number;
  pageToken?: string;
}

/** dedup.v1.ListRecordsResponse. */
export interface ListRecordsResponse {
  records: DedupRecord[];
  /** Empty on the last page. */
  nextPageToken: string;
}

/** PEM Buffers for TLS: the CA of the server's certificate, and a client certificate and key for mutual TLS. */
export interface TlsOptions {
  rootCerts?: Buffer | null;
  certChain?: Buffer | null;
  privateKey?: Buffer | null;
}

export interface ClientOptions {
  /** true trusts the system roots; an object names the CA and a client certificate. */
  tls?: boolean | TlsOptions;
  /**
   * Sent as "authorization: Bearer <token>". Defaults to DEDUPD_TOKEN; '' or
   * null sends none. Without TLS only to a loopback target.
   */
  token?: string | null;
  /** Per-call deadline in seconds; default 30, null for none. */
  timeout?: number | null;
  /** Passed to grpc-js. */
  channelOptions?: ChannelOptions;
}

/**
 * Options of one call, taken by every Client method that makes a call.
 * deadline replaces the client's timeout for this call: a Date, or
 * milliseconds since the epoch (as grpc-js takes it); past it the call
 * rejects with DEADLINE_EXCEEDED. Aborting signal cancels the call, which
 * rejects with AbortError; an already aborted signal rejects before
 * anything is sent.
 */
export interface CallOptions {
  deadline?: Date | number;
  signal?: AbortSignal;
}

export interface ClaimOptions {
  digest?: Uint8Array;
  /** Lease length in seconds; the server default when unset. */
  leaseTtl?: number | null;
  owner?: string;
  /**
   * Seconds the server may hold the call while another caller holds the key, until the holder's
   * outcome is stored or its lease runs out (at most the server's --max-claim-wait). Unset or 0
   * answers at once; a server without waiting ignores it.
   */
  wait?: number | null;
}

export interface RejectOptions {
  reason?: string;
  message?: string;
  detail?: Payload;
  /** true releases the key for a retry; false (default) stores a terminal rejection. */
  retryable?: boolean;
}

export interface ExtendLeaseOptions {
  /** New lease length in seconds from now; the server default when unset. */
  leaseTtl?: number | null;
}

/** A connection to one dedupd; every method rejects with a DedupError subclass. */
export class Client {
  /** target is a gRPC target, e.g. '127.0.0.1:7070' or 'dns:///dedupd.internal:7070'. */
  constructor(target: string, options?: ClientOptions);
  /** The per-call deadline in seconds, or null. */
  timeout: number | null;
  close(): void;
  claim(consumer: string, key: string, options?: ClaimOptions & CallOptions): Promise<ClaimResponse>;
  complete(consumer: string, key: string, fencingToken: FencingToken, result?: Payload, options?: CallOptions): Promise<DedupRecord>;
  reject(consumer: string, key: string, fencingToken: FencingToken, options?: RejectOptions & CallOptions): Promise<DedupRecord>;
  /** Rejects with RecordNotFound when the key has no live record. */
  lookup(consumer: string, key: string, options?: CallOptions): Promise<DedupRecord>;
  extendLease(consumer: string, key: string, fencingToken: FencingToken, options?: ExtendLeaseOptions & CallOptions): Promise<DedupRecord>;
  listRecords(consumer: string, filters?: ListRecordsFilters & CallOptions): Promise<ListRecordsResponse>;
  /** Every record ListRecords lists, following the pages; deadline and signal apply to each page's call. */
  iterRecords(consumer: string, filters?: ListRecordsFilters & CallOptions): AsyncGenerator<DedupRecord, void, undefined>;
  /** Claims one sequence of a stream; rejects with SequenceGap for an early event of a dense stream. */
  claimStream(consumer: string, stream: string, sequence: FencingToken, options?: ClaimStreamOptions & CallOptions): Promise<ClaimStreamResponse>;
  /** Finishes the sequence and moves the high-water mark to it; repeating it is harmless. */
  completeStream(consumer: string, stream: string, sequence: FencingToken, fencingToken: FencingToken,
    options?: CallOptions): Promise<DedupStream>;
  /** Finishes the sequence as a poison event: the mark moves past it. */
  rejectStream(consumer: string, stream: string, sequence: FencingToken, fencingToken: FencingToken,
    options?: RejectStreamOptions & CallOptions): Promise<DedupStream>;
  /** Gives the claim up without moving the mark. */
  releaseStream(consumer: string, stream: string, sequence: FencingToken, fencingToken: FencingToken,
    options?: CallOptions): Promise<DedupStream>;
  /** Rejects with StreamNotFound when the stream has no live record. */
  getStream(consumer: string, stream: string, options?: CallOptions): Promise<DedupStream>;
  listStreams(consumer: string, filters?: ListStreamsFilters & CallOptions): Promise<ListStreamsResponse>;
  /** completeStream resolving to the whole response, with the parked event handed back. */
  completeStreamNext(consumer: string, stream: string, sequence: FencingToken, fencingToken: FencingToken,
    options?: NextLeaseOptions & CallOptions): Promise<StreamFinishResponse>;
  /** rejectStream resolving to the whole response, with the parked event handed back. */
  rejectStreamNext(consumer: string, stream: string, sequence: FencingToken, fencingToken: FencingToken,
    options?: RejectStreamOptions & NextLeaseOptions & CallOptions): Promise<StreamFinishResponse>;
  /** Pushes out the lease of the sequence's claim (acquired, or a parked event handed out). */
  extendStreamLease(consumer: string, stream: string, sequence: FencingToken, fencingToken: FencingToken,
    options?: ExtendLeaseOptions & CallOptions): Promise<DedupStream>;
  /** Acquires a ready parked event of the consumer (or of options.stream). */
  claimParked(consumer: string, options?: ClaimParkedOptions & CallOptions): Promise<ClaimParkedResponse>;
  /** One page of a stream's parked events, without payloads. */
  listParked(consumer: string, stream: string, page?: { pageSize?: number; pageToken?: string } & CallOptions): Promise<ListParkedResponse>;
  /**
   * Batch calls (docs/api.md, Batches): one ItemResult per item, in order,
   * each what the lone call would have resolved to or rejected with. They
   * reject only for what concerns the whole call (consumer, credential,
   * too many items).
   */
  claimBatch(consumer: string, items: Array<ClaimBatchItem | string>, options?: CallOptions): Promise<Array<ItemResult<ClaimResponse>>>;
  finishBatch(consumer: string, items: FinishBatchItem[], options?: CallOptions): Promise<Array<ItemResult<DedupRecord>>>;
  extendLeaseBatch(consumer: string, items: ExtendLeaseBatchItem[], options?: CallOptions): Promise<Array<ItemResult<DedupRecord>>>;
  lookupBatch(consumer: string, keys: string[], options?: CallOptions): Promise<Array<ItemResult<DedupRecord>>>;
}

/** One key of a claimBatch: a key string, or a key with claim()'s options. */
export interface ClaimBatchItem extends ClaimOptions {
  key: string;
}

/** One outcome of a finishBatch: a Complete with result, or, with rejection, a Reject. */
export interface FinishBatchItem {
  key: string;
  fencingToken: FencingToken;
  result?: Payload;
  rejection?: { reason: string; message?: string; detail?: Payload; retryable?: boolean };
}

/** One lease of an extendLeaseBatch. */
export interface ExtendLeaseBatchItem {
  key: string;
  fencingToken: FencingToken;
  /** New lease length in seconds from now; the server default when unset. */
  leaseTtl?: number | null;
}

/** One item's answer in a batch: value, or the error its lone call would have thrown. */
export interface ItemResult<T> {
  value: T | null;
  error: DedupError | null;
  /** The record's result (or rejection message and detail) was left out to keep the reply within 4 MiB: read it with lookup(). */
  resultOmitted: boolean;
}

export type StreamMode = 'STREAM_MODE_UNSPECIFIED' | 'STREAM_MODE_DENSE' | 'STREAM_MODE_VERSIONS';

export type StreamOutcome = 'STREAM_OUTCOME_UNSPECIFIED' | 'STREAM_OUTCOME_ACQUIRED' | 'STREAM_OUTCOME_IN_PROGRESS' | 'STREAM_OUTCOME_DUPLICATE'
  | 'STREAM_OUTCOME_PARKED';

/** dedup.v1.Stream: a stream's high-water mark and its claim in flight. Unset messages are null. */
export interface DedupStream {
  consumer: string;
  stream: string;
  mode: StreamMode;
  /** The last sequence finished; '0' when none. */
  highWater: Int64;
  lastOutcome: State;
  lastRejection: Rejection | null;
  rejected: Int64;
  /** The sequence in flight; '0' when none. */
  inFlight: Int64;
  digest: Buffer;
  fencingToken: Int64;
  owner: string;
  leaseExpiresAt: Timestamp | null;
  createdAt: Timestamp | null;
  updatedAt: Timestamp | null;
  expiresAt: Timestamp | null;
  /** How many events the stream holds parked, and their payloads' bytes. */
  parked: Int64;
  parkedBytes: Int64;
  /** The last run of sequences the stream skipped (gap timeout or SkipGap); null when it never skipped. */
  lastSkipped: { fromSequence: Int64; toSequence: Int64; cause: string; skippedAt: Timestamp | null } | null;
  skipped: Int64;
}

/** dedup.v1.ParkedEvent: an event a stream held back until its turn; handed back it carries its token and lease. */
export interface ParkedEvent {
  consumer: string;
  stream: string;
  sequence: Int64;
  /** The event as it was parked (empty in listParked). */
  payload: Buffer;
  digest: Buffer;
  /** Set when handed out: pass it to completeStreamNext, rejectStreamNext, releaseStream, extendStreamLease. */
  fencingToken: Int64;
  leaseExpiresAt: Timestamp | null;
  parkedAt: Timestamp | null;
  payloadBytes: Int64;
  inFlight: boolean;
}

/** CompleteStream's and RejectStream's whole response: next is the parked event handed back, acquired for the caller, or null. */
export interface StreamFinishResponse {
  stream: DedupStream;
  next: ParkedEvent | null;
}

export interface NextLeaseOptions {
  /** The lease of the parked event handed back, in seconds; the server default when unset. */
  nextLeaseTtl?: number | null;
}

export interface ClaimParkedOptions {
  /** Only this stream's ready event; every stream of the consumer when ''. */
  stream?: string;
  leaseTtl?: number | null;
  owner?: string;
}

/** dedup.v1.ClaimParkedResponse: event is null when none was ready. */
export interface ClaimParkedResponse {
  event: ParkedEvent | null;
  stream: DedupStream | null;
}

/** dedup.v1.ListParkedResponse: ascending by sequence, payloads left out. */
export interface ListParkedResponse {
  events: ParkedEvent[];
  nextPageToken: string;
}

/** dedup.v1.ClaimStreamResponse. */
export interface ClaimStreamResponse {
  outcome: StreamOutcome;
  stream: DedupStream;
  /** Set ('0' otherwise) when outcome is STREAM_OUTCOME_ACQUIRED. */
  fencingToken: Int64;
  retryAfter: Duration | null;
}

export interface ClaimStreamOptions {
  /** Lease length in seconds; the server default when unset. */
  leaseTtl?: number | null;
  owner?: string;
  /** The mode the caller expects; unspecified accepts the stream's. */
  mode?: StreamMode;
  digest?: Uint8Array;
  /** As ClaimOptions.wait: DUPLICATE once the holder finishes the sequence, ACQUIRED once it releases it. */
  wait?: number | null;
  /** Park the event if it comes before its turn (STREAM_OUTCOME_PARKED instead of SequenceGap), with payload. */
  park?: boolean;
  payload?: Payload;
}

export interface RejectStreamOptions {
  reason?: string;
  message?: string;
  detail?: Payload;
}

/** The filters of ListStreams. */
export interface ListStreamsFilters {
  /** Only streams whose claim in flight ran out of lease. */
  leaseExpired?: boolean;
  pageSize?: number;
  pageToken?: string;
}

/** dedup.v1.ListStreamsResponse. */
export interface ListStreamsResponse {
  streams: DedupStream[];
  nextPageToken: string;
}

/**
 * The work doInOrder runs once per event: token is the fencing token,
 * attempt is always null (a stream counts no attempts), signal aborts when
 * the lease is lost (doInOrder extends it while fn runs) or the caller's
 * signal aborts, and stream is the stream as the claim left it (inFlight
 * is the event's sequence).
 */
export type InOrderWork = (token: Int64, attempt: null, signal: AbortSignal, stream: DedupStream) => void | Promise<void>;

/**
 * doInOrder's settle: same arguments as fn, run before it on every
 * acquisition (a released or abandoned sequence looks like a fresh one).
 * Return anything but null when the event's effect already happened (the
 * event completes and fn does not run), null when it did not; throw
 * Terminal to reject it as poison. Any other error leaves the claim in
 * flight until its lease runs out.
 */
export type InOrderSettle = (token: Int64, attempt: null, signal: AbortSignal, stream: DedupStream) =>
  Payload | null | Promise<Payload | null>;

/**
 * The work run on a parked event handed back (doInOrder's released,
 * doParked's fn): event.payload is the event as it was parked,
 * event.fencingToken its token; signal aborts when its lease is lost.
 * Terminal rejects it as poison; an error whose outcome is unknown leaves
 * it in flight until its lease runs out; any other error releases it for
 * doParked.
 */
export type ParkedWork = (event: ParkedEvent, signal: AbortSignal, stream: DedupStream) => void | Promise<void>;

/** settle for a parked event: same arguments as ParkedWork; anything but null means its effect already happened. */
export type ParkedSettle = (event: ParkedEvent, signal: AbortSignal, stream: DedupStream) =>
  Payload | null | Promise<Payload | null>;

export interface InOrderOptions {
  /** Lease length in seconds (default 30), extended while settle and fn run. */
  leaseTtl?: number;
  owner?: string;
  mode?: StreamMode;
  digest?: Uint8Array;
  /** How long to wait for another holder of the stream, in seconds (default 30). */
  maxWait?: number;
  /** Asks whether an earlier holder already applied the event; see InOrderSettle. */
  settle?: InOrderSettle | null;
  /**
   * The caller's cancellation: stops the wait and aborts fn's signal. An
   * error from fn after it aborted leaves the claim in flight, as a crash would.
   */
  signal?: AbortSignal | null;
  /** Park the event if it comes before its turn, and run the parked events that come back after it (needs released). */
  park?: boolean;
  /** The event as released will get it back. */
  payload?: Payload;
  /** Runs each parked event handed back, in order. */
  released?: ParkedWork | null;
  /** settle for those events. */
  settleReleased?: ParkedSettle | null;
}

/**
 * What became of the parked events handed back after an event: released
 * are the sequences finished in order (completed, settled or rejected as
 * poison), rejected those rejected; unfinished is the one the chain could
 * not finish and unfinishedError why (null when it ran out).
 */
export interface ReleasedChain {
  stream: DedupStream;
  released: Int64[];
  rejected: Int64[];
  unfinished: ParkedEvent | null;
  unfinishedError: unknown;
}

export interface InOrderResult extends ReleasedChain {
  /** true when the event was at or below the mark and fn did not run. */
  duplicate: boolean;
  /** true when settle found the effect and fn did not run. */
  settled: boolean;
  /** true when (park) the event came before its turn and dedupd holds it: fn did not run; ack the message. */
  parked: boolean;
}

export interface DoParkedOptions {
  /** Only this stream's parked events; every stream of the consumer when ''. */
  stream?: string;
  /** Lease length in seconds (default 30), extended while settle and fn run. */
  leaseTtl?: number;
  owner?: string;
  settle?: ParkedSettle | null;
  signal?: AbortSignal | null;
}

export interface DoParkedResult extends Omit<ReleasedChain, 'stream'> {
  /** false when no parked event was ready: nothing ran. */
  found: boolean;
  stream: DedupStream | null;
}

/**
 * Picks up one ready parked event (its holder's lease ran out, it was
 * released, or a gap was skipped) and the ones after it, running settle
 * and fn on each in order. Rejects only with claimParked's errors.
 */
export function doParked(client: Client, consumer: string, fn: ParkedWork, options?: DoParkedOptions): Promise<DoParkedResult>;

/**
 * Processes event sequence of a stream at most once, in order: skips a
 * duplicate, rejects with SequenceGap (err.expected) for an early event
 * (with park: true parks it instead, or rejects with ParkUnsupported),
 * runs fn and completes; fn throwing Terminal records a poison event
 * (StreamRejected), any other error releases the claim and is rethrown.
 */
export function doInOrder(client: Client, consumer: string, stream: string, sequence: FencingToken, fn: InOrderWork,
  options?: InOrderOptions): Promise<InOrderResult>;

/**
 * The work do() runs once per key: token is the fencing token (pass it to
 * your own writes); attempt counts acquisitions of the key, 1 on the first
 * acquisition; above 1, an earlier holder may have done the effect (settle
 * runs first then); signal aborts when the lease is lost, so check it
 * before an effect that cannot be fenced; record is the claimed record.
 * What it returns is stored as the result.
 */
export type Work = (token: Int64, attempt: Int64, signal: AbortSignal, record: DedupRecord) =>
  Payload | null | undefined | void | Promise<Payload | null | undefined | void>;

/**
 * do()'s and reconcile()'s settle: same arguments as fn, run before fn on
 * every acquisition whose attempt is above 1. It asks your own system
 * whether the effect happened (e.g. the payment gateway's lookup by event
 * id): return its result when it did (do() completes with it, fn does not
 * run), null when it did not (fn runs). Throw Terminal to refuse the key.
 * Any other error (and undefined) leaves the claim PENDING: the message
 * should be nacked, and settle runs again after the lease.
 */
export type Settle = (token: Int64, attempt: Int64, signal: AbortSignal, record: DedupRecord) =>
  Payload | null | Promise<Payload | null>;

export interface DoOptions {
  digest?: Uint8Array;
  /** Lease length in seconds (default 30). */
  leaseTtl?: number;
  owner?: string;
  /** How long to wait for another holder of the key, in seconds (default 30). */
  maxWait?: number;
  initialBackoff?: number;
  maxBackoff?: number;
  /** Seconds between lease extensions (default leaseTtl / 3). */
  heartbeatEvery?: number;
  /** Asks whether an earlier holder already did the effect; see Settle. */
  settle?: Settle | null;
  /**
   * The caller's cancellation: stops the wait and aborts fn's signal. An
   * error from fn after it aborted leaves the claim PENDING (no release),
   * as a crash would: the effect may have happened. So does an error named
   * TimeoutError or AbortError (AbortSignal.timeout(), fetch()).
   */
  signal?: AbortSignal | null;
}

export interface DoResult {
  result: Buffer;
  record: DedupRecord;
  /** true when the stored result came back and fn did not run. */
  replayed: boolean;
  /** true when settle found the effect (fn did not run) and its result was stored. */
  settled: boolean;
}

/**
 * Runs fn at most once per key to a stored outcome. Rejects with Rejected,
 * InProgressTimeout, DigestMismatch, LeaseLost, settle's error (the claim
 * stays PENDING), or fn's own error (the key was released, unless the
 * caller's signal had aborted).
 */
declare function doOnce(client: Client, consumer: string, key: string, fn: Work, options?: DoOptions): Promise<DoResult>;
export { doOnce, doOnce as do };

/** doBatch()'s work for one acquired key of a poll; the arguments after key are Work's. */
export type BatchWork = (key: string, token: Int64, attempt: Int64, signal: AbortSignal, record: DedupRecord) =>
  Payload | null | undefined | void | Promise<Payload | null | undefined | void>;

/** doBatch()'s settle: Settle with the key first, as BatchWork takes it. */
export type BatchSettle = (key: string, token: Int64, attempt: Int64, signal: AbortSignal, record: DedupRecord) =>
  Payload | null | Promise<Payload | null>;

export interface DoBatchOptions {
  /** Lease length in seconds (default 30). */
  leaseTtl?: number;
  owner?: string;
  /** How many fn calls run at once (default 8). */
  parallelism?: number;
  /** Seconds between the poll's lease extensions (default leaseTtl / 3). */
  heartbeatEvery?: number;
  /** Run for each acquired key whose attempt is above 1; see Settle. A key whose settle throws stays PENDING. */
  settle?: BatchSettle | null;
  /** The caller's cancellation: a key whose fn fails after it aborted stays PENDING. */
  signal?: AbortSignal | null;
}

/** One message's outcome in doBatch: outcome as do() resolves, or error as it would reject. */
export interface BatchOutcome {
  key: string;
  outcome: DoResult | null;
  error: unknown;
}

/**
 * do() for a whole poll: one claimBatch, fn for the acquired keys (replays
 * skip it; a key another caller holds gets InProgressTimeout at once), one
 * extendLeaseBatch per heartbeat, one finishBatch.
 */
export function doBatch(client: Client, consumer: string, items: Array<string | { key: string; digest?: Uint8Array }>,
  fn: BatchWork, options?: DoBatchOptions): Promise<BatchOutcome[]>;

/** Throw from do()'s fn to refuse the work for good: the rejection is stored and replayed. */
export class Terminal extends Error {
  constructor(reason: string, message?: string, detail?: Payload);
  reason: string;
  rejectionMessage: string;
  detail: Payload;
}

/** What reconcile()'s decide says happened to an abandoned claim. */
export type Decision =
  | { complete: Payload }
  | { reject: { reason: string; message?: string; detail?: Payload } }
  | { release: { reason?: string; message?: string } };

export type Decide = (record: DedupRecord, token: Int64) => Decision | Promise<Decision>;

export interface ReconcileOptions {
  leaseTtl?: number;
  owner?: string;
  pageSize?: number;
}

export interface Settled {
  key: string;
  /** null when the claim was not acquired (another caller got there first). */
  decision: Decision | null;
  record: DedupRecord;
}

/**
 * Takes over each PENDING record whose lease ran out and records what decide
 * says, or what settle (the function do() takes) finds: a result completes,
 * null releases, Terminal rejects, any other error leaves the claim PENDING
 * and is rethrown.
 */
export function reconcile(client: Client, consumer: string, decide: Decide | { settle: Settle }, options?: ReconcileOptions): Promise<Settled[]>;

/** A Duration request field from seconds; null/undefined stays unset (the server default). */
export function duration(secs: number | null | undefined): { seconds: number; nanos: number } | null;

/** Seconds in a Duration (0 for null). */
export function seconds(d: Duration | TimeInput | null | undefined): number;

/** A JSON value digestJSON and canonicalJSON take. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [member: string]: JSONValue };

/** 0x01 || SHA-256 of the bytes (a string as UTF-8). */
export function digestBytes(data: string | Uint8Array): Buffer;
/** Digest of the RFC 8785 canonical form of a JSON value. */
export function digestJSON(value: JSONValue): Buffer;
/** Digest of a JSON text, parsed strictly (duplicate member names are refused). */
export function digestJSONText(text: string | Buffer): Buffer;
/** Digest of a protobuf message's deterministic serialization; map fields are refused. */
export function digestProto(type: Type, message: Message | { [field: string]: unknown }): Buffer;
/** The RFC 8785 canonical serialization of a JSON value. */
export function canonicalJSON(value: JSONValue): Buffer;

/** The ErrorInfo domain of dedupd's errors. */
export const ERROR_DOMAIN: 'dedup.v1';

/**
 * Every ErrorInfo reason dedupd sends: the values of enum ErrorReason in
 * proto/dedup/v1/error_reason.proto (a test checks this list against it).
 */
export type ErrorReason =
  | 'INVALID_FIELD'
  | 'MALFORMED_REQUEST'
  | 'RECORD_NOT_FOUND'
  | 'POLICY_NOT_FOUND'
  | 'DIGEST_MISMATCH'
  | 'ALREADY_FINISHED'
  | 'LEASE_LOST'
  | 'STORE_UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'CANCELED'
  | 'INTERNAL'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'RATE_LIMITED'
  | 'OVERLOADED'
  | 'SEQUENCE_GAP'
  | 'STREAM_MODE_MISMATCH'
  | 'STREAM_NOT_FOUND'
  | 'PARK_FULL'
  | 'NO_GAP';

/** Each reason by name: Reason.LEASE_LOST === 'LEASE_LOST'. */
export const Reason: { readonly [R in ErrorReason]: R };

export interface DedupErrorOptions {
  code?: number | null;
  reason?: string;
  metadata?: { [key: string]: string };
  record?: DedupRecord | null;
  stream?: DedupStream | null;
  cause?: unknown;
}

/** An error answered by dedupd, or by gRPC on the way. */
export class DedupError extends Error {
  constructor(message: string, options?: DedupErrorOptions);
  /** The gRPC status code (grpc.status), or null. */
  code: number | null;
  /**
   * The ErrorInfo reason, '' when there is none. A string rather than
   * ErrorReason: a newer server may send a reason this copy does not list.
   */
  reason: ErrorReason | (string & {});
  /** ErrorInfo metadata, e.g. field for INVALID_FIELD. */
  metadata: { [key: string]: string };
  /** The stored record, when the server attached one. */
  record: DedupRecord | null;
  /** The stored stream, for stream refusals. */
  stream: DedupStream | null;
}
/** Same key, other content: record is the stored record. */
export class DigestMismatch extends DedupError {}
/** The fencing token is no longer current. */
export class LeaseLost extends DedupError {}
/** The key already has another terminal outcome. */
export class AlreadyFinished extends DedupError {}
/** Lookup of a key with no live record. */
export class RecordNotFound extends DedupError {}
/** A field broke the API's limits (metadata.field names it), or the request did not decode. */
export class InvalidRequest extends DedupError {}
/** The server or its store could not be reached. */
export class Unavailable extends DedupError {}
/** No credential, or one dedupd does not know. */
export class Unauthenticated extends DedupError {}
/** A known credential that does not cover the call's consumer. */
export class PermissionDenied extends DedupError {}
/** do() waited maxWait while another caller held the key; record is the last seen. */
export class InProgressTimeout extends DedupError {}
/** The key's outcome is a terminal rejection, fresh (replayed false) or stored earlier. */
export class Rejected extends DedupError {
  constructor(record: DedupRecord, replayed: boolean, cause?: unknown);
  record: DedupRecord;
  replayed: boolean;
  rejection: Rejection;
}

/** A dense stream was claimed past the sequence it expects next (SEQUENCE_GAP). */
export class SequenceGap extends DedupError {
  /** The sequence the stream accepts next. */
  readonly expected: Int64;
}
/** The claim named another mode than the stream's or its consumer's stream policy. */
export class StreamModeMismatch extends DedupError {}
/** getStream of a stream with no live record. */
export class StreamNotFound extends DedupError {}
/** A claim with park found no room (PARK_FULL): nothing stored; let the message be redelivered. */
export class ParkFull extends DedupError {}
/** doInOrder with park was answered SEQUENCE_GAP: the server does not know park mode; cause is the SequenceGap. */
export class ParkUnsupported extends DedupError {}
/**
 * The call's signal was aborted, before sending (nothing reached the server)
 * or in flight (the call was cancelled; it may or may not have been done).
 * name is 'AbortError', code CANCELLED, cause the signal's reason.
 */
export class AbortError extends DedupError {
  constructor(reason?: unknown);
}
/** doInOrder's fn threw Terminal: the event was recorded as poison; stream is the stream afterwards. */
export class StreamRejected extends DedupError {
  /** The InOrderResult, with the parked events run after the poison one. */
  result?: InOrderResult;
}

/** Converts a grpc-js ServiceError into the matching DedupError subclass. */
export function fromServiceError(err: ServiceError): DedupError;

/** The dedup.v1 protos the client loaded. */
export const proto: {
  /** protobufjs types, e.g. proto.root.lookupType('dedup.v1.ClaimRequest') for digestProto. */
  root: Root;
  /** The directory holding dedup/v1/*.proto. */
  protoDir(): string;
};
