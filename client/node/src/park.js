'use strict';
// Park mode: the StreamService calls that hand back the next parked event,
// a stream lease's heartbeat, the chain of parked events run in order, and
// doParked(), the pickup worker.
//
// A parked event handed back (the `next` of a completion, or claimParked)
// is already acquired for the caller. Each one runs settle, then fn, while
// a heartbeat extends its lease, and is completed (or rejected, for
// Terminal), which may hand back the next one, and so on in order. A
// failure on a parked event ends the chain and is reported in the result
// (unfinished, unfinishedError), not thrown: the delivered event is done
// and its message should be acked. An event the chain leaves is released
// at once for doParked(), unless its outcome is unknown (a cancellation, a
// timeout, the lease lost): doParked() takes it once its lease runs out.

const crypto = require('node:crypto');
const { Client, duration, int64, seconds, toBuffer } = require('./client');
const { AlreadyFinished, DedupError, LeaseLost, StreamNotFound } = require('./errors');
const { linkSignal, runSettle, unknownOutcome } = require('./settle');
const { Terminal } = require('./terminal');

Object.assign(Client.prototype, {
  /** completeStream resolving to the whole response: {stream, next} (next: the parked event handed back, or null). */
  completeStreamNext(consumer, stream, sequence, fencingToken, { nextLeaseTtl, ...callOptions } = {}) {
    return this.call('CompleteStream', { consumer, stream, sequence: int64(sequence, 'sequence'),
      fencingToken: int64(fencingToken), nextLeaseTtl: duration(nextLeaseTtl) }, this.streamStub, callOptions);
  },

  /** rejectStream resolving to {stream, next}, as completeStreamNext. */
  rejectStreamNext(consumer, stream, sequence, fencingToken, { reason = '', message = '', detail = Buffer.alloc(0), nextLeaseTtl, ...callOptions } = {}) {
    return this.call('RejectStream', { consumer, stream, sequence: int64(sequence, 'sequence'),
      fencingToken: int64(fencingToken), reason, message, detail: toBuffer(detail), nextLeaseTtl: duration(nextLeaseTtl) },
    this.streamStub, callOptions);
  },

  /** Pushes out the lease of the sequence's claim (acquired, or a parked event handed out); resolves to the stream. */
  async extendStreamLease(consumer, stream, sequence, fencingToken, { leaseTtl, ...callOptions } = {}) {
    return (await this.call('ExtendStreamLease', { consumer, stream, sequence: int64(sequence, 'sequence'),
      fencingToken: int64(fencingToken), leaseTtl: duration(leaseTtl) }, this.streamStub, callOptions)).stream;
  },

  /** Acquires a ready parked event of the consumer (of stream, when not ''): resolves to {event, stream}, event null when none is ready. */
  claimParked(consumer, { stream = '', leaseTtl, owner = '', ...callOptions } = {}) {
    return this.call('ClaimParked', { consumer, stream, leaseTtl: duration(leaseTtl), owner }, this.streamStub, callOptions);
  },

  /** One page of a stream's parked events, without payloads: {pageSize, pageToken}. */
  listParked(consumer, stream, { deadline, signal, ...page } = {}) {
    return this.call('ListParked', { consumer, stream, ...page }, this.streamStub, { deadline, signal });
  },
});

/** The length in seconds of the stream's claim in flight, else fallback. */
function leaseSpan(st, fallback) {
  const span = st && st.leaseExpiresAt && st.updatedAt ? seconds(st.leaseExpiresAt) - seconds(st.updatedAt) : 0;
  return span > 0 ? span : fallback;
}

/**
 * Extends the lease of one stream sequence every third of its length; its
 * controller aborts (reason: the loss) when dedupd says the lease is gone,
 * or when the lease runs out before an extension got through.
 */
class StreamHeartbeat {
  constructor(client, consumer, stream, sequence, token, { leaseTtl, span, sent }) {
    this.controller = new AbortController();
    this.lost = null;
    this.inflight = Promise.resolve();
    const lose = (err) => {
      if (this.lost) return;
      this.lost = err;
      this.stop();
      this.controller.abort(err);
    };
    const arm = (ends) => {
      clearTimeout(this.expiry);
      this.expiry = setTimeout(() => lose(new LeaseLost(`the stream's lease of ${span}s ran out before it could be extended`)),
        Math.max(0, ends - Date.now()));
    };
    arm(sent + span * 1000);
    this.timer = setInterval(() => {
      const at = Date.now();
      this.inflight = client.extendStreamLease(consumer, stream, sequence, token, { leaseTtl })
        .then((st) => { if (!this.lost) arm(at + leaseSpan(st, span) * 1000); })
        .catch((err) => {
          if (err instanceof LeaseLost || err instanceof AlreadyFinished || err instanceof StreamNotFound) lose(err);
          // anything else is transient: the next beat tries again within the lease
        });
    }, Math.max(1, (span * 1000) / 3));
  }

  stop() {
    clearInterval(this.timer);
    clearTimeout(this.expiry);
    return this.inflight;
  }
}

/**
 * Runs settle then fn (args: what they get, with the heartbeat's signal
 * put in at signalAt) under the lease of one held sequence. Resolves to
 * {settled} on success, {terminal} for Terminal, {release: err} for an
 * error to release on, {unknown, cause} for an outcome left unknown (an
 * error after the lease was lost included; unknown is then the loss);
 * the heartbeat is stopped either way.
 */
async function runHeld(client, consumer, held, { leaseTtl, signal, settle, fn, args, signalAt }) {
  const beat = new StreamHeartbeat(client, consumer, held.stream, held.sequence, held.token,
    { leaseTtl, span: leaseSpan(held.at, leaseTtl), sent: held.sent });
  const unlink = linkSignal(signal, beat.controller);
  const callArgs = [...args];
  callArgs[signalAt] = beat.controller.signal;
  let settled;
  try {
    const found = await runSettle(settle, null, callArgs);
    if (found.terminal) return { terminal: found.terminal };
    settled = found.settled;
    if (!settled) await fn(...callArgs);
  } catch (err) {
    if (err instanceof Terminal) return { terminal: err };
    // settle's own error, or fn's whose outcome is unknown: the claim
    // stays in flight until its lease runs out.
    if (settled === undefined || unknownOutcome(err, signal) || beat.lost) return { unknown: beat.lost || err, cause: err };
    return { release: err };
  } finally {
    unlink();
    await beat.stop();
  }
  // Success is recorded even if the lease was lost meanwhile: the server
  // refuses the completion if another caller took the event over.
  return { settled };
}

/** Why a parked event came back to a doInOrder without park. */
class NoReleasedHandler extends DedupError {}

/**
 * Runs released (and settleReleased) on the parked event ev and each one
 * its finish hands back; st is the stream the acquisition left, sent when
 * it was sent (ms). Resolves to {stream, released, rejected, unfinished,
 * unfinishedError}.
 */
async function runReleased(client, consumer, st, ev, sent, { leaseTtl, released, settleReleased, signal }) {
  const chain = { stream: st, released: [], rejected: [], unfinished: null, unfinishedError: null };
  const leave = async (event, why) => {
    try {
      chain.stream = await client.releaseStream(consumer, event.stream || st.stream, event.sequence, event.fencingToken);
    } catch (err) {
      if (!(err instanceof DedupError)) throw err; // it waits for its lease instead
    }
    Object.assign(chain, { unfinished: event, unfinishedError: why });
    return chain;
  };
  while (ev) {
    const event = ev;
    const held = { stream: event.stream || st.stream, sequence: event.sequence, token: event.fencingToken, at: st, sent };
    if (!released) return leave(event, new NoReleasedHandler('a parked event came back to doInOrder without park: released for doParked'));
    if (signal && signal.aborted) return leave(event, signal.reason);
    const step = await runHeld(client, consumer, held,
      { leaseTtl, signal, settle: settleReleased, fn: released, args: [event, null, st], signalAt: 1 });
    if (step.unknown) return Object.assign(chain, { unfinished: event, unfinishedError: step.unknown });
    if (step.release) return leave(event, step.release);
    sent = Date.now();
    let resp;
    try {
      if (step.terminal) {
        const t = step.terminal;
        resp = await client.rejectStreamNext(consumer, held.stream, held.sequence, held.token,
          { reason: t.reason, message: t.rejectionMessage, detail: t.detail, nextLeaseTtl: leaseTtl });
        chain.rejected.push(held.sequence);
      } else {
        resp = await client.completeStreamNext(consumer, held.stream, held.sequence, held.token, { nextLeaseTtl: leaseTtl });
      }
    } catch (err) {
      if (!(err instanceof DedupError)) throw err;
      return Object.assign(chain, { unfinished: event, unfinishedError: err });
    }
    chain.released.push(held.sequence);
    chain.stream = st = resp.stream;
    ev = resp.next;
  }
  return chain;
}

/**
 * Picks up one ready parked event of the consumer (of options.stream) and
 * the ones its completion hands back, running fn(event, signal, stream)
 * after settle (same arguments) on each. Resolves to {found, stream,
 * released, rejected, unfinished, unfinishedError}; found is false when
 * nothing was ready. Rejects only with claimParked's errors.
 */
async function doParked(client, consumer, fn, { stream = '', leaseTtl = 30, owner = '', settle = null, signal = null } = {}) {
  const me = `${owner.slice(0, 200)}#${crypto.randomBytes(12).toString('hex')}`;
  const sent = Date.now();
  const resp = await client.claimParked(consumer, { stream, leaseTtl, owner: me, signal });
  if (!resp.event) return { found: false, stream: null, released: [], rejected: [], unfinished: null, unfinishedError: null };
  const chain = await runReleased(client, consumer, resp.stream, resp.event, sent,
    { leaseTtl, released: fn, settleReleased: settle, signal });
  return { found: true, ...chain };
}

module.exports = { doParked, runHeld, runReleased, leaseSpan };
