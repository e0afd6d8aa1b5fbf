'use strict';
// doInOrder(): a stream's sequenced events processed at most once each, in
// order. Claim the sequence; a duplicate resolves with {duplicate: true}
// and fn does not run; a gap (an earlier event not processed yet) rejects
// with SequenceGap, whose err.expected is the sequence the stream wants
// next; while another caller holds the stream it waits up to maxWait. Once
// acquired it runs fn(token) and completes; fn throwing Terminal rejects
// the event as poison (the stream moves past it) and rejects with
// StreamRejected; any other error releases the claim and is rethrown.

const { seconds } = require('./client');
const { DedupError, InProgressTimeout } = require('./errors');
const { Terminal } = require('./do');

/** fn threw Terminal: the event was recorded as poison; err.stream is the stream afterwards. */
class StreamRejected extends DedupError {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function doInOrder(client, consumer, stream, sequence, fn, {
  leaseTtl = 30, owner = '', mode = 'STREAM_MODE_UNSPECIFIED', digest = Buffer.alloc(0), maxWait = 30,
} = {}) {
  const deadline = Date.now() + maxWait * 1000;
  let backoff = 0.05;
  let resp;
  for (;;) {
    resp = await client.claimStream(consumer, stream, sequence, { leaseTtl, owner, mode, digest });
    if (resp.outcome === 'STREAM_OUTCOME_DUPLICATE') return { duplicate: true, stream: resp.stream };
    if (resp.outcome === 'STREAM_OUTCOME_ACQUIRED') break;
    const wait = Math.min(backoff * (0.5 + Math.random() / 2), seconds(resp.retryAfter));
    if (Date.now() + wait * 1000 > deadline) {
      throw new InProgressTimeout(`stream ${stream} still in progress after ${maxWait}s`, { stream: resp.stream });
    }
    await sleep(wait * 1000);
    backoff = Math.min(2 * backoff, 2);
  }
  const token = resp.fencingToken;
  try {
    await fn(token);
  } catch (err) {
    if (err instanceof Terminal) {
      const st = await client.rejectStream(consumer, stream, sequence, token,
        { reason: err.reason, message: err.rejectionMessage, detail: err.detail });
      throw new StreamRejected(`rejected: ${err.reason}: ${err.rejectionMessage}`, { reason: 'REJECTED', stream: st, cause: err });
    }
    await client.releaseStream(consumer, stream, sequence, token);
    throw err;
  }
  return { duplicate: false, stream: await client.completeStream(consumer, stream, sequence, token) };
}

module.exports = { doInOrder, StreamRejected };
