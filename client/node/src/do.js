'use strict';
// do(): the two-phase pattern done for the caller. Claim the key; if
// acquired, run fn(token, attempt, signal, record) while a heartbeat keeps
// the lease alive, then Complete with what fn returned. A stored outcome is
// replayed without running fn. While another caller holds the key, do()
// waits up to maxWait seconds: each claim asks the server to wait for the
// holder's outcome (wait), and a claim answered IN_PROGRESS sooner (a
// server without waiting, or past its bounds) is repeated with jittered
// exponential backoff, never past the holder's lease (retryAfter). signal
// aborts when the lease is lost.
//
// settle: on an acquisition whose attempt is above 1 an earlier holder may
// have done the effect, so settle (same arguments as fn) runs first and
// asks the caller's own system: a result means the effect happened (do()
// completes with it, fn does not run), null means it did not (fn runs),
// Terminal refuses the key. If settle throws, the outcome is still unknown:
// the claim stays PENDING and the error is rethrown.
//
// How each failure ends: Terminal from fn or settle stores a rejection;
// any other error from fn releases the key (a retryable Reject), which is
// safe because the next acquisition runs settle. An unknown outcome is not
// released but kept PENDING, as a crash would be: an error after the
// caller's own AbortSignal (options.signal) aborted, or a timeout or abort
// (TimeoutError, AbortError), whose request may still have done its work.

const crypto = require('node:crypto');
const { seconds, toBuffer } = require('./client');
const { AlreadyFinished, DedupError, InProgressTimeout, LeaseLost, Rejected } = require('./errors');
const { claimUnlessAborted, runSettle, linkSignal, sleepUnlessAborted, unknownOutcome } = require('./settle');
const { Terminal } = require('./terminal');

// The reason of the release after fn threw anything but Terminal; the
// message names the error. The Go and Python clients use the same.
const RETRYABLE_REASON = 'RETRYABLE_ERROR';

/**
 * Runs fn at most once per key to a stored outcome. Resolves to
 * {result: Buffer, record, replayed, settled}; rejects with Rejected (fresh
 * or replayed), InProgressTimeout, DigestMismatch, LeaseLost, settle's
 * error (claim left PENDING), or fn's own error (key released, unless the
 * caller's signal aborted).
 */
async function doOnce(client, consumer, key, fn, {
  digest = Buffer.alloc(0), leaseTtl = 30, owner = '', maxWait = 30,
  initialBackoff = 0.05, maxBackoff = 2, heartbeatEvery, settle = null, signal = null,
} = {}) {
  const deadline = Date.now() + maxWait * 1000;
  let backoff = initialBackoff;
  // A unique owner lets do() recognise its own claim whose ACQUIRED reply
  // was lost and retried into IN_PROGRESS (as the Go client does).
  const me = `${truncate(owner, 200)}#${crypto.randomBytes(12).toString('hex')}`;
  for (;;) {
    if (signal) signal.throwIfAborted();
    const resp = await claimUnlessAborted(signal, () => client.claim(consumer, key,
      { digest, leaseTtl, owner: me, wait: (deadline - Date.now()) / 1000, signal }));
    if (resp.outcome === 'OUTCOME_IN_PROGRESS' && resp.record.owner === me) {
      resp.outcome = 'OUTCOME_ACQUIRED';
      resp.fencingToken = resp.record.fencingToken;
    }
    switch (resp.outcome) {
      case 'OUTCOME_ACQUIRED':
        return runClaimed(client, consumer, key, resp, fn,
          { leaseTtl, every: heartbeatEvery || leaseTtl / 3, settle, signal });
      case 'OUTCOME_COMPLETED':
        return { result: resp.record.result, record: resp.record, replayed: true, settled: false };
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
    await sleepUnlessAborted(wait * 1000, signal);
    backoff = Math.min(backoff * 2, maxBackoff);
  }
}

async function runClaimed(client, consumer, key, claim, fn, { leaseTtl, every, settle, signal }) {
  const token = claim.fencingToken;
  const beat = new Heartbeat(client, consumer, key, token, leaseTtl, every);
  const unlink = linkSignal(signal, beat.controller);
  const args = [token, claim.record.attempts, beat.controller.signal, claim.record];
  const rejectTerminal = async (err) => {
    const record = await client.reject(consumer, key, token, { reason: err.reason, message: err.rejectionMessage, detail: err.detail });
    throw new Rejected(record, false, err);
  };
  let result;
  let settled = false;
  try {
    const found = await runSettle(settle, claim.record.attempts, args);
    if (found.terminal) return await rejectTerminal(found.terminal);
    settled = found.settled;
    result = settled ? found.result : await runFn(fn, args, signal, async (err) => {
      if (err instanceof Terminal) return rejectTerminal(err);
      await release(client, consumer, key, token, err);
      throw err;
    });
  } finally {
    unlink();
    await beat.stop();
  }
  if (beat.lost) throw beat.lost;
  const record = await client.complete(consumer, key, token, toBuffer(result));
  return { result: record.result, record, replayed: false, settled };
}

/**
 * Runs fn(...args); on an error, onError(err) records it, unless the
 * outcome is unknown (a cancellation, a timeout: see unknownOutcome): then
 * the claim stays PENDING (no release) and the error goes up as it is.
 */
async function runFn(fn, args, callerSignal, onError) {
  try {
    return await fn(...args);
  } catch (err) {
    if (unknownOutcome(err, callerSignal)) throw err;
    return onError(err);
  }
}

async function release(client, consumer, key, token, err) {
  try {
    await client.reject(consumer, key, token, { reason: RETRYABLE_REASON, message: errorText(err), retryable: true });
  } catch (releaseErr) {
    if (!(releaseErr instanceof DedupError)) throw releaseErr;
    // the lease runs out anyway; fn's own error matters more
  }
}

/** The release message for fn's error: its name and message, capped. */
function errorText(err) {
  return truncate(err instanceof Error ? `${err.name}: ${err.message}` : String(err), 4096);
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

module.exports = { doOnce, Terminal, Heartbeat, RETRYABLE_REASON, truncate, errorText, runFn };
