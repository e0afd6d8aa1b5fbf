'use strict';
// do(): the two-phase pattern done for the caller. Claim the key; if
// acquired, run fn(token, attempt, signal) while a heartbeat keeps the lease
// alive, then Complete with what fn returned. If fn throws Terminal, the key
// is rejected for good; any other error releases the key (a retryable
// Reject) so that a redelivery runs fn again. A stored outcome is replayed
// without running fn. While another caller holds the key, do() waits with
// jittered exponential backoff, never past the holder's lease (retryAfter),
// up to maxWait seconds. signal aborts when the lease is lost.

const crypto = require('node:crypto');
const { seconds, toBuffer } = require('./client');
const { AlreadyFinished, DedupError, InProgressTimeout, LeaseLost, Rejected } = require('./errors');

// The reason of the release after fn threw anything but Terminal; the
// message names the error. The Go and Python clients use the same.
const RETRYABLE_REASON = 'RETRYABLE_ERROR';

/** Throw from fn to refuse the work for good: the rejection is stored and replayed. */
class Terminal extends Error {
  constructor(reason, message = '', detail = Buffer.alloc(0)) {
    super(message ? `${reason}: ${message}` : reason);
    this.name = 'Terminal';
    this.reason = reason;
    this.detail = detail;
    this.rejectionMessage = message;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs fn at most once per key to a stored outcome. Resolves to
 * {result: Buffer, record, replayed}; rejects with Rejected (fresh or
 * replayed), InProgressTimeout, DigestMismatch, LeaseLost, or fn's own
 * error after the key was released.
 */
async function doOnce(client, consumer, key, fn, {
  digest = Buffer.alloc(0), leaseTtl = 30, owner = '', maxWait = 30,
  initialBackoff = 0.05, maxBackoff = 2, heartbeatEvery,
} = {}) {
  const deadline = Date.now() + maxWait * 1000;
  let backoff = initialBackoff;
  // A unique owner lets do() recognise its own claim whose ACQUIRED reply
  // was lost and retried into IN_PROGRESS (as the Go client does).
  const me = `${truncate(owner, 200)}#${crypto.randomBytes(12).toString('hex')}`;
  for (;;) {
    const resp = await client.claim(consumer, key, { digest, leaseTtl, owner: me });
    if (resp.outcome === 'OUTCOME_IN_PROGRESS' && resp.record.owner === me) {
      resp.outcome = 'OUTCOME_ACQUIRED';
      resp.fencingToken = resp.record.fencingToken;
    }
    switch (resp.outcome) {
      case 'OUTCOME_ACQUIRED':
        return runClaimed(client, consumer, key, resp, fn, leaseTtl, heartbeatEvery || leaseTtl / 3);
      case 'OUTCOME_COMPLETED':
        return { result: resp.record.result, record: resp.record, replayed: true };
      case 'OUTCOME_REJECTED':
        throw new Rejected(resp.record, true);
      case 'OUTCOME_IN_PROGRESS':
        break;
      default:
        throw new DedupError(`unexpected claim outcome ${resp.outcome}`, { record: resp.record });
    }
    let wait = backoff * (0.5 + Math.random() / 2);
    if (resp.retryAfter) wait = Math.min(wait, seconds(resp.retryAfter));
    if (Date.now() + wait * 1000 > deadline) {
      throw new InProgressTimeout(`${consumer}/${key} still in progress after ${maxWait}s`, { record: resp.record });
    }
    await sleep(wait * 1000);
    backoff = Math.min(backoff * 2, maxBackoff);
  }
}

async function runClaimed(client, consumer, key, claim, fn, leaseTtl, every) {
  const token = claim.fencingToken;
  const beat = new Heartbeat(client, consumer, key, token, leaseTtl, every);
  let result;
  try {
    result = await fn(token, claim.record.attempts, beat.controller.signal);
  } catch (err) {
    await beat.stop();
    if (err instanceof Terminal) {
      const record = await client.reject(consumer, key, token, { reason: err.reason, message: err.rejectionMessage, detail: err.detail });
      throw new Rejected(record, false, err);
    }
    try {
      await client.reject(consumer, key, token, {
        reason: RETRYABLE_REASON,
        message: truncate(err instanceof Error ? `${err.name}: ${err.message}` : String(err), 4096),
        retryable: true,
      });
    } catch (releaseErr) {
      if (!(releaseErr instanceof DedupError)) throw releaseErr;
      // the lease runs out anyway; fn's own error matters more
    }
    throw err;
  }
  await beat.stop();
  if (beat.lost) throw beat.lost;
  const record = await client.complete(consumer, key, token, toBuffer(result));
  return { result: record.result, record, replayed: false };
}

function truncate(text, limit) {
  return Buffer.from(text, 'utf8').subarray(0, limit).toString('utf8').replace(/\uFFFD$/, '');
}

/** Extends the lease every `every` seconds; aborts controller.signal when the lease is lost. */
class Heartbeat {
  constructor(client, consumer, key, token, leaseTtl, every) {
    this.controller = new AbortController();
    this.lost = null;
    this.inflight = Promise.resolve();
    this.timer = setInterval(() => {
      this.inflight = client.extendLease(consumer, key, token, { leaseTtl }).catch((err) => {
        if (err instanceof LeaseLost || err instanceof AlreadyFinished) {
          this.lost = err;
          clearInterval(this.timer);
          this.controller.abort(err);
        } // anything else is transient: the next beat tries again within the lease
      });
    }, every * 1000);
  }

  async stop() {
    clearInterval(this.timer);
    await this.inflight;
  }
}

module.exports = { doOnce, Terminal, RETRYABLE_REASON, truncate };
