'use strict';
// DedupdPersistenceLayer: dedupd as the store of the idempotency utility of
// Powertools for AWS Lambda (TypeScript), in place of DynamoDB. This file
// defines the class over the Powertools classes it is given, without
// loading Powertools itself: powertools.js builds it on Powertools'
// CommonJS build, powertools.mjs on its ES module build, so that each sits
// on the same Powertools as the application's makeIdempotent.
//
// How Powertools' calls map onto dedupd:
// - _putRecord is a Claim of (consumer, Powertools' key) with Powertools'
//   payload hash as the digest, so the digest check runs inside the claim.
//   Acquired (a new key, a released one, or an in-progress record whose
//   lease ran out: a takeover) returns; anything else throws
//   IdempotencyItemAlreadyExistsError with the stored record, which
//   Powertools replays (COMPLETED), refuses as in progress (INPROGRESS), or
//   refuses as another payload (the stored payload hash differs).
// - _updateRecord is a Complete of the handler's response (JSON), under the
//   invocation's fencing token: a holder whose lease ran out and was taken
//   over cannot overwrite the one who took over (LEASE_LOST).
// - _deleteRecord, after the handler threw, is a retryable Reject: the key
//   is released and the next invocation runs the handler again.
// - _getRecord is a Lookup.
// The lease is the option leaseTtl when given, extended by a heartbeat
// while the handler runs (a lease decoupled from the Lambda timeout), else
// the Lambda's remaining time (inProgressExpiryTimestamp), else 30 s
// extended by a heartbeat. Retention is the consumer's dedupd policy
// (completed_ttl; dedupctl policy set), not Powertools' expiresAfterSeconds.

const crypto = require('node:crypto');
const { digestBytes } = require('./digest');
const { Heartbeat, RETRYABLE_REASON } = require('./do');

// The lease when neither leaseTtl nor the Lambda's remaining time is known.
const DEFAULT_LEASE_TTL = 30;
// Digests are at most 64 bytes (docs/api.md).
const MAX_DIGEST_BYTES = 64;

/**
 * The digest of a Powertools payload hash: the hash's own bytes when it is
 * base64 of at most 64 bytes (md5, sha256, sha512: the stored record then
 * gives the hash back), else the dedupd digest of its text. '' (payload
 * validation off) is the empty digest.
 */
function payloadDigest(payloadHash) {
  if (!payloadHash) return Buffer.alloc(0);
  const raw = Buffer.from(payloadHash, 'base64');
  if (raw.length > 0 && raw.length <= MAX_DIGEST_BYTES && raw.toString('base64') === payloadHash) return raw;
  return digestBytes(payloadHash);
}

/** The payload hash a stored digest stands for (see payloadDigest). */
function storedPayloadHash(digest) {
  return digest && digest.length ? Buffer.from(digest).toString('base64') : '';
}

function timestampMs(ts) {
  return ts ? Number(ts.seconds) * 1000 + ts.nanos / 1e6 : undefined;
}

/** The response stored by Complete (JSON), or undefined for none. */
function encodeResponse(response) {
  const json = JSON.stringify(response);
  return json === undefined ? Buffer.alloc(0) : Buffer.from(json, 'utf8');
}

function decodeResponse(result) {
  return result && result.length ? JSON.parse(Buffer.from(result).toString('utf8')) : undefined;
}

function defineLayer({ BasePersistenceLayer, IdempotencyRecord, IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError, IdempotencyRecordStatus }) {
  class DedupdPersistenceLayer extends BasePersistenceLayer {
    #client;
    #consumer;
    #leaseTtl;
    #owner;
    // The claims held by running invocations: key -> [{token, invocation, beat}].
    #held = new Map();
    // The invocation whose call is on the stack (see #during).
    #invocation = undefined;

    /**
     * options: client (a @dedupd/client Client), consumer (the dedupd
     * consumer of the records), leaseTtl (seconds; see the file comment),
     * owner (recorded on each claim, for diagnostics).
     */
    constructor({ client, consumer, leaseTtl, owner = 'powertools' } = {}) {
      super();
      if (!client || typeof client.claim !== 'function') throw new TypeError('DedupdPersistenceLayer needs client: a @dedupd/client Client');
      if (typeof consumer !== 'string' || consumer === '') throw new TypeError('DedupdPersistenceLayer needs consumer: a dedupd consumer name');
      if (leaseTtl !== undefined && !(typeof leaseTtl === 'number' && leaseTtl > 0)) throw new TypeError('leaseTtl must be a positive number of seconds');
      this.#client = client;
      this.#consumer = consumer;
      this.#leaseTtl = leaseTtl;
      this.#owner = owner;
    }

    // The fencing token is kept per invocation. Powertools passes each
    // invocation's payload (the same value) to saveInProgress, saveSuccess
    // and deleteRecord, and they call _putRecord, _updateRecord and
    // _deleteRecord before their first await; so the payload, noted while
    // the call is on the stack, tells whose claim an update is, even when
    // another invocation in this process took the key over after a lease
    // ran out.
    #during(data, call) {
      const outer = this.#invocation;
      this.#invocation = { data };
      try {
        return call();
      } finally {
        this.#invocation = outer;
      }
    }

    saveInProgress(data, remainingTimeInMillis) {
      return this.#during(data, () => super.saveInProgress(data, remainingTimeInMillis));
    }

    saveSuccess(data, result) {
      return this.#during(data, () => super.saveSuccess(data, result));
    }

    deleteRecord(data) {
      return this.#during(data, () => super.deleteRecord(data));
    }

    async _putRecord(record) {
      const invocation = this.#invocation;
      const key = record.idempotencyKey;
      const fromLambda = this.#leaseTtl === undefined && record.inProgressExpiryTimestamp !== undefined;
      const leaseTtl = fromLambda
        ? Math.max(0.001, (record.inProgressExpiryTimestamp - Date.now()) / 1000)
        : (this.#leaseTtl ?? DEFAULT_LEASE_TTL);
      const owner = `${this.#owner}#${crypto.randomBytes(12).toString('hex')}`;
      let resp;
      try {
        resp = await this.#client.claim(this.#consumer, key, { digest: payloadDigest(record.payloadHash), leaseTtl, owner });
      } catch (err) {
        if (err.reason === 'DIGEST_MISMATCH' && err.record) {
          throw this.#exists(err.record, storedPayloadHash(err.record.digest));
        }
        throw err;
      }
      // Our own claim whose ACQUIRED reply was lost and retried.
      const ours = resp.outcome === 'OUTCOME_IN_PROGRESS' && resp.record.owner === owner;
      if (resp.outcome === 'OUTCOME_ACQUIRED' || ours) {
        const token = ours ? resp.record.fencingToken : resp.fencingToken;
        let beat = null;
        if (!fromLambda) {
          beat = new Heartbeat(this.#client, this.#consumer, key, token, leaseTtl, leaseTtl / 3);
          if (beat.timer.unref) beat.timer.unref(); // never keeps the process alive
        }
        const held = this.#held.get(key) || [];
        held.push({ token, invocation, beat });
        this.#held.set(key, held);
        return;
      }
      if (resp.outcome === 'OUTCOME_COMPLETED' || resp.outcome === 'OUTCOME_IN_PROGRESS') {
        throw this.#exists(resp.record, record.payloadHash); // the digests matched
      }
      throw new Error(`dedupd answered ${resp.outcome} for ${key}: a record Powertools does not write`);
    }

    async _getRecord(idempotencyKey) {
      let rec;
      try {
        rec = await this.#client.lookup(this.#consumer, idempotencyKey);
      } catch (err) {
        if (err.reason === 'RECORD_NOT_FOUND') throw new IdempotencyItemNotFoundError(`no record of ${idempotencyKey}`);
        throw err;
      }
      if (rec.state === 'STATE_RELEASED') throw new IdempotencyItemNotFoundError(`${idempotencyKey} was released`);
      return this.#toRecord(rec, storedPayloadHash(rec.digest));
    }

    async _updateRecord(record) {
      const held = this.#take(record.idempotencyKey, this.#invocation);
      if (!held) throw new Error(`this invocation holds no claim of ${record.idempotencyKey}`);
      if (held.beat) await held.beat.stop();
      await this.#client.complete(this.#consumer, record.idempotencyKey, held.token, encodeResponse(record.responseData));
    }

    async _deleteRecord(record) {
      const held = this.#take(record.idempotencyKey, this.#invocation);
      if (!held) return; // nothing of ours to release
      if (held.beat) await held.beat.stop();
      try {
        await this.#client.reject(this.#consumer, record.idempotencyKey, held.token, {
          reason: RETRYABLE_REASON, message: 'the handler threw; Powertools deleted its record', retryable: true,
        });
      } catch (err) {
        // Taken over after the lease ran out, or finished by its new holder:
        // the key is no longer ours to release.
        if (err.reason !== 'LEASE_LOST' && err.reason !== 'ALREADY_FINISHED') throw err;
      }
    }

    /** The claim of key held by invocation (or the latest, without one), removed. */
    #take(key, invocation) {
      const held = this.#held.get(key);
      if (!held) return null;
      let i = invocation ? held.findIndex((h) => h.invocation && h.invocation.data === invocation.data) : -1;
      if (i < 0) i = held.length - 1;
      const [found] = held.splice(i, 1);
      if (held.length === 0) this.#held.delete(key);
      return found;
    }

    #exists(rec, payloadHash) {
      return new IdempotencyItemAlreadyExistsError(`Failed to put record for already existing idempotency key: ${rec.key}`,
        this.#toRecord(rec, payloadHash));
    }

    #toRecord(rec, payloadHash) {
      if (rec.state === 'STATE_REJECTED') {
        throw new Error(`${rec.key} is rejected in dedupd (${rec.rejection.reason}): a record Powertools does not write`);
      }
      const completed = rec.state === 'STATE_COMPLETED';
      const expiresAt = timestampMs(rec.expiresAt);
      return new IdempotencyRecord({
        idempotencyKey: rec.key,
        status: completed ? IdempotencyRecordStatus.COMPLETED : IdempotencyRecordStatus.INPROGRESS,
        expiryTimestamp: expiresAt === undefined ? undefined : Math.floor(expiresAt / 1000),
        inProgressExpiryTimestamp: completed ? undefined : timestampMs(rec.leaseExpiresAt),
        responseData: completed ? decodeResponse(rec.result) : undefined,
        payloadHash,
      });
    }
  }
  return DedupdPersistenceLayer;
}

module.exports = { defineLayer, payloadDigest, storedPayloadHash, DEFAULT_LEASE_TTL };
