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
// leaves the claim in flight. A heartbeat extends the lease while settle
// and fn run; signal aborts when the lease is lost, or when the caller's
// signal aborts (then an error from fn leaves the claim in flight too, as
// a crash would; so does a timeout).
//
// With park: true (and payload, the event as it will come back), an event
// that arrives before its turn is parked: dedupd stores it, fn does not
// run, and the result has parked: true, so the caller acks its message. A
// completion that hands back the next parked event runs released(event,
// signal, stream) on it at once, after settleReleased (same arguments),
// and so on in order (see park.js); the result's released lists them. A
// server without park mode answers SEQUENCE_GAP, rejected as
// ParkUnsupported.

const { DedupError, InProgressTimeout, ParkUnsupported, SequenceGap } = require('./errors');
const { runHeld, runReleased } = require('./park');
const { claimUnlessAborted, sleepUnlessAborted } = require('./settle');
const { seconds } = require('./client');

/** fn threw Terminal: the event was recorded as poison; err.stream is the stream afterwards, err.result the InOrderResult. */
class StreamRejected extends DedupError {}

async function doInOrder(client, consumer, stream, sequence, fn, {
  leaseTtl = 30, owner = '', mode = 'STREAM_MODE_UNSPECIFIED', digest = Buffer.alloc(0), maxWait = 30,
  settle = null, signal = null, park = false, payload = Buffer.alloc(0), released = null, settleReleased = null,
} = {}) {
  if (park && !released) throw new TypeError('doInOrder with park: true needs released, to run the parked events that come back');
  const deadline = Date.now() + maxWait * 1000;
  let backoff = 0.05;
  let resp;
  let sent;
  for (;;) {
    if (signal) signal.throwIfAborted();
    sent = Date.now();
    try {
      resp = await claimUnlessAborted(signal, () => client.claimStream(consumer, stream, sequence,
        { leaseTtl, owner, mode, digest, wait: (deadline - sent) / 1000, park, payload, signal }));
    } catch (err) {
      if (park && err instanceof SequenceGap) {
        throw new ParkUnsupported(`a claim with park of ${stream} #${sequence} was answered SEQUENCE_GAP: the server does not support park mode`,
          { reason: err.reason, stream: err.stream, cause: err });
      }
      throw err;
    }
    const base = { duplicate: false, settled: false, parked: false, stream: resp.stream, released: [], rejected: [], unfinished: null, unfinishedError: null };
    if (resp.outcome === 'STREAM_OUTCOME_DUPLICATE') return { ...base, duplicate: true };
    if (resp.outcome === 'STREAM_OUTCOME_PARKED') return { ...base, parked: true };
    if (resp.outcome === 'STREAM_OUTCOME_ACQUIRED') break;
    const wait = Math.min(backoff * (0.5 + Math.random() / 2), seconds(resp.retryAfter));
    if (Date.now() + wait * 1000 > deadline) {
      throw new InProgressTimeout(`stream ${stream} still in progress after ${maxWait}s`, { stream: resp.stream });
    }
    await sleepUnlessAborted(wait * 1000, signal);
    backoff = Math.min(2 * backoff, 2);
  }
  const token = resp.fencingToken;
  const held = { stream, sequence, token, at: resp.stream, sent };
  const step = await runHeld(client, consumer, held,
    { leaseTtl, signal, settle, fn, args: [token, null, null, resp.stream], signalAt: 2 });
  if (step.unknown) throw step.cause || step.unknown; // nothing recorded: the claim stays in flight
  if (step.release) {
    await client.releaseStream(consumer, stream, sequence, token);
    throw step.release;
  }
  const chainOptions = { leaseTtl, released, settleReleased, signal };
  const finishedAt = Date.now();
  if (step.terminal) {
    const t = step.terminal;
    const rej = await client.rejectStreamNext(consumer, stream, sequence, token,
      { reason: t.reason, message: t.rejectionMessage, detail: t.detail, nextLeaseTtl: leaseTtl });
    const err = new StreamRejected(`rejected: ${t.reason}: ${t.rejectionMessage}`, { reason: 'REJECTED', stream: rej.stream, cause: t });
    err.result = inOrderResult(await runReleased(client, consumer, rej.stream, rej.next, finishedAt, chainOptions), false);
    throw err;
  }
  const done = await client.completeStreamNext(consumer, stream, sequence, token, { nextLeaseTtl: leaseTtl });
  return inOrderResult(await runReleased(client, consumer, done.stream, done.next, finishedAt, chainOptions), step.settled);
}

function inOrderResult(chain, settled) {
  return { duplicate: false, settled, parked: false, ...chain };
}

module.exports = { doInOrder, StreamRejected };
