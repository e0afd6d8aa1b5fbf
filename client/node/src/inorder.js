'use strict';
// doInOrder(): a stream's sequenced events processed at most once each, in
// order. Claim the sequence; a duplicate resolves with {duplicate: true}
// and fn does not run; a gap (an earlier event not processed yet) rejects
// with SequenceGap, whose err.expected is the sequence the stream wants
// next; while another caller holds the stream it waits up to maxWait. Once
// acquired it runs fn(token, attempt, signal, stream) and completes; fn
// throwing Terminal rejects the event as poison (the stream moves past it)
// and rejects with StreamRejected; any other error releases the claim and
// is rethrown.
//
// A stream keeps no attempt count, and a released sequence looks like a
// fresh one, so attempt is null and settle (same arguments as fn) runs on
// every acquisition: a result means the effect happened (complete, skip
// fn), null means run fn, Terminal rejects the event, any other error
// leaves the claim in flight. The lease is not extended: signal aborts
// when it runs out, or when the caller's signal aborts (then an error from
// fn leaves the claim in flight too, as a crash would; so does a timeout).

const { seconds } = require('./client');
const { DedupError, InProgressTimeout } = require('./errors');
const { claimUnlessAborted, linkSignal, runSettle, sleepUnlessAborted, unknownOutcome } = require('./settle');
const { Terminal } = require('./terminal');

/** fn threw Terminal: the event was recorded as poison; err.stream is the stream afterwards. */
class StreamRejected extends DedupError {}

async function doInOrder(client, consumer, stream, sequence, fn, {
  leaseTtl = 30, owner = '', mode = 'STREAM_MODE_UNSPECIFIED', digest = Buffer.alloc(0), maxWait = 30,
  settle = null, signal = null,
} = {}) {
  const deadline = Date.now() + maxWait * 1000;
  let backoff = 0.05;
  let resp;
  let sent;
  for (;;) {
    if (signal) signal.throwIfAborted();
    sent = Date.now();
    resp = await claimUnlessAborted(signal, () => client.claimStream(consumer, stream, sequence,
      { leaseTtl, owner, mode, digest, wait: (deadline - sent) / 1000, signal }));
    if (resp.outcome === 'STREAM_OUTCOME_DUPLICATE') return { duplicate: true, settled: false, stream: resp.stream };
    if (resp.outcome === 'STREAM_OUTCOME_ACQUIRED') break;
    const wait = Math.min(backoff * (0.5 + Math.random() / 2), seconds(resp.retryAfter));
    if (Date.now() + wait * 1000 > deadline) {
      throw new InProgressTimeout(`stream ${stream} still in progress after ${maxWait}s`, { stream: resp.stream });
    }
    await sleepUnlessAborted(wait * 1000, signal);
    backoff = Math.min(2 * backoff, 2);
  }
  const token = resp.fencingToken;
  const lease = new LeaseTimer(resp.stream, sent);
  const unlink = linkSignal(signal, lease.controller);
  const args = [token, null, lease.controller.signal, resp.stream];
  const poison = async (err) => {
    const st = await client.rejectStream(consumer, stream, sequence, token,
      { reason: err.reason, message: err.rejectionMessage, detail: err.detail });
    throw new StreamRejected(`rejected: ${err.reason}: ${err.rejectionMessage}`, { reason: 'REJECTED', stream: st, cause: err });
  };
  let settled;
  try {
    const found = await runSettle(settle, null, args);
    if (found.terminal) return await poison(found.terminal);
    settled = found.settled;
    if (!settled) await fn(...args);
  } catch (err) {
    if (err instanceof StreamRejected) throw err;
    if (err instanceof Terminal) return poison(err);
    // settle's own error, or fn's that leaves the outcome unknown (a
    // cancellation, a timeout): the claim stays in flight until its lease
    // runs out.
    if (settled === undefined || unknownOutcome(err, signal)) throw err;
    await client.releaseStream(consumer, stream, sequence, token);
    throw err;
  } finally {
    unlink();
    lease.stop();
  }
  return { duplicate: false, settled, stream: await client.completeStream(consumer, stream, sequence, token) };
}

/** Aborts controller.signal when the lease granted by a claim sent at `sent` (ms) runs out. */
class LeaseTimer {
  constructor(st, sent) {
    this.controller = new AbortController();
    const granted = st.leaseExpiresAt && st.updatedAt ? seconds(st.leaseExpiresAt) - seconds(st.updatedAt) : 0;
    this.timer = setTimeout(() => this.controller.abort(new DedupError(`the stream's lease of ${granted}s ran out`)),
      Math.max(0, sent + granted * 1000 - Date.now()));
  }

  stop() {
    clearTimeout(this.timer);
  }
}

module.exports = { doInOrder, StreamRejected };
