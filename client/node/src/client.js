'use strict';
// Client: promise-returning wrappers over every DedupService RPC. Each
// method resolves to the response (records as plain objects: camelCase
// fields, enums as strings, int64 as decimal strings, bytes as Buffers) and
// rejects with a DedupError subclass.

const grpc = require('@grpc/grpc-js');
const { DedupService, StreamService } = require('./proto');
const { AbortError, fromServiceError, fromStatus } = require('./errors');
const { callDeadline, checkSignal } = require('./calloptions');
const { isLoopback } = require('./loopback');

// UNAVAILABLE means nothing was done, so gRPC retries it. Every
// DedupService call is safe to repeat: Complete, Reject and ExtendLease
// repeat to the same record, and a repeated Claim whose first answer was
// lost at worst reports the caller's own claim as IN_PROGRESS until its
// lease runs out.
const RETRY_SERVICE_CONFIG = JSON.stringify({
  methodConfig: [{
    name: [{ service: 'dedup.v1.DedupService' }, { service: 'dedup.v1.StreamService' }],
    retryPolicy: {
      maxAttempts: 4, initialBackoff: '0.05s', maxBackoff: '1s', backoffMultiplier: 2,
      retryableStatusCodes: ['UNAVAILABLE'],
    },
  }],
});

/** A google.protobuf.Duration from seconds; undefined stays unset (the server default). */
function duration(secs) {
  if (secs === undefined || secs === null) return null;
  const whole = Math.floor(secs);
  return { seconds: whole, nanos: Math.round((secs - whole) * 1e9) };
}

/** The wait field from seconds: unset when none is asked or none is left. */
function waitDuration(secs) {
  return secs > 0 ? duration(secs) : null;
}

/**
 * A fencing token (or any int64) as the decimal string the wire layer takes:
 * a string of digits or a bigint as given, a number only while it is a safe
 * integer (past 2^53 it has already lost the token).
 */
function int64(value, name = 'fencingToken') {
  let n = null;
  if (typeof value === 'bigint') n = value;
  else if (typeof value === 'string' && /^-?[0-9]{1,19}$/.test(value)) n = BigInt(value);
  else if (Number.isSafeInteger(value)) n = BigInt(value);
  if (n === null || BigInt.asIntN(64, n) !== n) {
    throw new TypeError(`${name} must be an int64 as a decimal string, a bigint or a safe integer, not ${typeof value} ${String(value).slice(0, 40)}`);
  }
  return n.toString();
}

/** Seconds in a Duration object. */
function seconds(d) {
  return d ? Number(d.seconds) + d.nanos / 1e9 : 0;
}

/** The environment variable a Client takes its token from when none is given. */
const TOKEN_ENV = 'DEDUPD_TOKEN';

/** Channel credentials for the tls option (see Client). */
function transportCredentials(tls) {
  if (!tls) return grpc.credentials.createInsecure();
  const { rootCerts = null, certChain = null, privateKey = null } = tls === true ? {} : tls;
  if (!certChain !== !privateKey) throw new TypeError('a client certificate needs both certChain and privateKey');
  return grpc.credentials.createSsl(rootCerts, privateKey, certChain);
}

class Client {
  /**
   * new Client('127.0.0.1:7070') connects without TLS. Options:
   * - tls: true (system roots), or {rootCerts, certChain, privateKey}
   *   (PEM Buffers: the CA that signed the server's certificate, and a
   *   client certificate and its key for mutual TLS);
   * - token: sent as "authorization: Bearer <token>" with every call; when
   *   undefined the DEDUPD_TOKEN environment variable is used if set
   *   (token: '' or null sends none). Without TLS a token is sent only to a
   *   loopback target; for any other the constructor throws;
   * - timeout: the per-call deadline in seconds (default 30, null for none);
   * - channelOptions: passed to grpc-js.
   */
  constructor(target, { tls = false, token = process.env[TOKEN_ENV], timeout = 30, channelOptions = {} } = {}) {
    const creds = transportCredentials(tls);
    if (token && !tls && !isLoopback(target)) {
      throw new TypeError(`refusing to send a bearer token in plaintext to ${target}: pass tls`);
    }
    // Per-call metadata rather than call credentials: grpc-js composes call
    // credentials only with TLS, and a plaintext token is allowed to
    // loopback (checked above). Kept off the instance's enumerable fields
    // so that logging a Client never shows the token.
    Object.defineProperty(this, 'metadata', { value: bearerMetadata(token), enumerable: false });
    this.timeout = timeout;
    this.stub = new DedupService(target, creds, { 'grpc.service_config': RETRY_SERVICE_CONFIG, ...channelOptions });
    // StreamService on the same channel.
    this.streamStub = new StreamService(target, creds, { channelOverride: this.stub.getChannel() });
  }

  close() {
    this.stub.close();
  }

  /**
   * Makes one unary call. callOptions: deadline (a Date, or milliseconds
   * since the epoch as grpc-js takes it; replaces the client's timeout for
   * this call) and signal (an AbortSignal: aborting cancels the call, which
   * rejects with AbortError; an already aborted signal rejects before
   * anything is sent).
   */
  call(method, request, stub = this.stub, { deadline, signal } = {}) {
    return new Promise((resolve, reject) => { // a TypeError thrown here rejects
      checkSignal(signal);
      const options = { deadline: callDeadline(deadline, this.timeout) };
      if (options.deadline === undefined) delete options.deadline;
      if (signal && signal.aborted) {
        reject(new AbortError(signal.reason));
        return;
      }
      const cancel = () => call.cancel();
      const call = stub[method](request, this.metadata.clone(), options, (err, resp) => {
        if (signal) signal.removeEventListener('abort', cancel);
        if (!err) resolve(resp);
        // A CANCELLED answer after our abort is our own cancel.
        else reject(signal && signal.aborted && err.code === grpc.status.CANCELLED ? new AbortError(signal.reason) : fromServiceError(err));
      });
      if (signal) signal.addEventListener('abort', cancel, { once: true });
    });
  }

  /**
   * Resolves to the ClaimResponse {outcome, record, fencingToken, retryAfter}. leaseTtl in seconds.
   * wait (seconds) lets the server hold the call while another caller holds the key, until the
   * holder's outcome is stored or its lease runs out (at most the server's --max-claim-wait); a
   * server without waiting ignores it and answers at once.
   */
  claim(consumer, key, { digest = Buffer.alloc(0), leaseTtl, owner = '', wait, ...callOptions } = {}) {
    return this.call('Claim', { consumer, key, digest, leaseTtl: duration(leaseTtl), owner, wait: waitDuration(wait) },
      this.stub, callOptions);
  }

  /** Stores the result; resolves to the COMPLETED record. */
  async complete(consumer, key, fencingToken, result = Buffer.alloc(0), callOptions = {}) {
    return (await this.call('Complete', { consumer, key, fencingToken: int64(fencingToken), result: toBuffer(result) }, this.stub, callOptions)).record;
  }

  /** Stores a terminal rejection, or with retryable releases the key; resolves to the record. */
  async reject(consumer, key, fencingToken, { reason = '', message = '', detail = Buffer.alloc(0), retryable = false, ...callOptions } = {}) {
    return (await this.call('Reject', { consumer, key, fencingToken: int64(fencingToken), reason, message, detail: toBuffer(detail), retryable },
      this.stub, callOptions)).record;
  }

  /** Resolves to the key's record; rejects with RecordNotFound if there is none. */
  async lookup(consumer, key, callOptions = {}) {
    return (await this.call('Lookup', { consumer, key }, this.stub, callOptions)).record;
  }

  /** Pushes the lease out to leaseTtl seconds from now; resolves to the record. */
  async extendLease(consumer, key, fencingToken, { leaseTtl, ...callOptions } = {}) {
    return (await this.call('ExtendLease', { consumer, key, fencingToken: int64(fencingToken), leaseTtl: duration(leaseTtl) },
      this.stub, callOptions)).record;
  }

  /** One page of ListRecords: filters are ListRecordsRequest fields in camelCase. */
  listRecords(consumer, { deadline, signal, ...filters } = {}) {
    return this.call('ListRecords', { consumer, ...filters }, this.stub, { deadline, signal });
  }

  /** Every record ListRecords lists, following the pages. */
  async* iterRecords(consumer, filters = {}) {
    let pageToken = filters.pageToken || '';
    do {
      const page = await this.listRecords(consumer, { ...filters, pageToken });
      yield* page.records;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  // StreamService: events with a sequence number per entity (stream).

  /**
   * Claims one sequence of a stream; resolves to the ClaimStreamResponse
   * {outcome, stream, fencingToken, retryAfter}. Rejects with SequenceGap
   * (err.expected) for an early event of a dense stream; with park: true
   * the server stores it with payload instead and answers
   * STREAM_OUTCOME_PARKED (the park-mode calls are in park.js). wait is as
   * for claim(): the server answers DUPLICATE once the holder finishes the
   * sequence, ACQUIRED once it releases it or its lease runs out.
   */
  claimStream(consumer, stream, sequence, { leaseTtl, owner = '', mode = 'STREAM_MODE_UNSPECIFIED', digest = Buffer.alloc(0),
    wait, park = false, payload = Buffer.alloc(0), ...callOptions } = {}) {
    return this.call('ClaimStream', { consumer, stream, sequence: int64(sequence, 'sequence'), mode, digest,
      leaseTtl: duration(leaseTtl), owner, wait: waitDuration(wait), park, payload: toBuffer(payload) }, this.streamStub, callOptions);
  }

  /** Finishes the sequence and moves the high-water mark to it; resolves to the stream. */
  async completeStream(consumer, stream, sequence, fencingToken, callOptions = {}) {
    return (await this.call('CompleteStream', { consumer, stream, sequence: int64(sequence, 'sequence'),
      fencingToken: int64(fencingToken) }, this.streamStub, callOptions)).stream;
  }

  /** Finishes the sequence as a poison event: the mark moves past it. */
  async rejectStream(consumer, stream, sequence, fencingToken, { reason = '', message = '', detail = Buffer.alloc(0), ...callOptions } = {}) {
    return (await this.call('RejectStream', { consumer, stream, sequence: int64(sequence, 'sequence'),
      fencingToken: int64(fencingToken), reason, message, detail: toBuffer(detail) }, this.streamStub, callOptions)).stream;
  }

  /** Gives the claim up without moving the mark. */
  async releaseStream(consumer, stream, sequence, fencingToken, callOptions = {}) {
    return (await this.call('ReleaseStream', { consumer, stream, sequence: int64(sequence, 'sequence'),
      fencingToken: int64(fencingToken) }, this.streamStub, callOptions)).stream;
  }

  /** Resolves to the stream; rejects with StreamNotFound when it has none. */
  async getStream(consumer, stream, callOptions = {}) {
    return (await this.call('GetStream', { consumer, stream }, this.streamStub, callOptions)).stream;
  }

  /** One page of ListStreams: {leaseExpired, pageSize, pageToken}. */
  listStreams(consumer, { deadline, signal, ...filters } = {}) {
    return this.call('ListStreams', { consumer, ...filters }, this.streamStub, { deadline, signal });
  }
}

// Batch calls (docs/api.md, Batches): one result per item, in order, each
// {value, error, resultOmitted}: value is what the lone call would have
// resolved to (a ClaimResponse, or a record), error the DedupError it would
// have rejected with. A batch call itself rejects only for what concerns
// the whole call (the consumer, the credential, too many items).
Object.assign(Client.prototype, {
  /** items: [{key, digest, leaseTtl, owner}] or key strings. */
  async claimBatch(consumer, items, callOptions = {}) {
    const resp = await this.call('ClaimBatch', {
      consumer,
      items: items.map((it) => (typeof it === 'string' ? { key: it } : it)).map(({ key, digest = Buffer.alloc(0), leaseTtl, owner = '' }) => (
        { key, digest, leaseTtl: duration(leaseTtl), owner })),
    }, this.stub, callOptions);
    return resp.results.map((r) => itemResult(r, r.claim));
  },

  /** items: [{key, fencingToken, result}] to Complete, or [{key, fencingToken, rejection: {reason, message, detail, retryable}}] to Reject. */
  async finishBatch(consumer, items, callOptions = {}) {
    const resp = await this.call('FinishBatch', {
      consumer,
      items: items.map(({ key, fencingToken, result, rejection }) => (rejection
        ? { key, fencingToken: int64(fencingToken), rejection: { ...rejection, detail: toBuffer(rejection.detail) } }
        : { key, fencingToken: int64(fencingToken), result: toBuffer(result) })),
    }, this.stub, callOptions);
    return recordResults(resp);
  },

  /** items: [{key, fencingToken, leaseTtl}]: the heartbeat of a whole poll. */
  async extendLeaseBatch(consumer, items, callOptions = {}) {
    const resp = await this.call('ExtendLeaseBatch', {
      consumer,
      items: items.map(({ key, fencingToken, leaseTtl }) => ({ key, fencingToken: int64(fencingToken), leaseTtl: duration(leaseTtl) })),
    }, this.stub, callOptions);
    return recordResults(resp);
  },

  /** Reads many keys; a key with no record has RecordNotFound. */
  async lookupBatch(consumer, keys, callOptions = {}) {
    return recordResults(await this.call('LookupBatch', { consumer, keys }, this.stub, callOptions));
  },
});

function itemResult(r, value) {
  return { value: r.error ? null : value, error: r.error ? fromStatus(r.error) : null, resultOmitted: r.resultOmitted };
}

function recordResults(resp) {
  return resp.results.map((r) => itemResult(r, r.record));
}

function bearerMetadata(token) {
  const md = new grpc.Metadata();
  if (token) md.set('authorization', `Bearer ${token}`);
  return md;
}

function toBuffer(v) {
  if (v === undefined || v === null) return Buffer.alloc(0);
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v);
}

module.exports = { Client, TOKEN_ENV, isLoopback, int64, duration, seconds, toBuffer };
