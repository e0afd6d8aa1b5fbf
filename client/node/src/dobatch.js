'use strict';
// doBatch(): doOnce() for a whole poll, in three calls however many
// messages. One claimBatch claims every key: a stored outcome is replayed
// without running fn (Rejected for a stored rejection), and a key another
// caller holds gets InProgressTimeout at once (doBatch does not wait: the
// message comes back with a later poll). For each acquired key, at most
// `parallelism` at once, settle runs first when the attempt is above 1 and
// fn runs unless settle found the effect, while one timer extends all their
// leases with extendLeaseBatch; one finishBatch then records every outcome
// as doOnce records one: Complete, Reject for Terminal, a release for any
// other error of fn. A key whose settle threw, or whose fn's error leaves
// the outcome unknown (a cancellation, a timeout), is left PENDING (no
// finish item). A key named
// twice runs once; the later one gets the first's outcome. signal aborts
// when that key's lease is lost.

const crypto = require('node:crypto');
const { toBuffer } = require('./client');
const { AlreadyFinished, InProgressTimeout, LeaseLost, RecordNotFound, Rejected } = require('./errors');
const { RETRYABLE_REASON, errorText, truncate } = require('./do');
const { linkSignal, runSettle, unknownOutcome } = require('./settle');
const { Terminal } = require('./terminal');

/**
 * items: key strings or {key, digest}. fn(key, token, attempt, signal,
 * record), and settle with the same arguments. Resolves to one {key,
 * outcome, error} per item, in order: outcome as doOnce resolves ({result,
 * record, replayed, settled}), error as it would reject.
 */
async function doBatch(client, consumer, items, fn, {
  leaseTtl = 30, owner = '', parallelism = 8, heartbeatEvery, settle = null, signal = null,
} = {}) {
  if (signal) signal.throwIfAborted();
  const me = `${truncate(owner, 200)}#${crypto.randomBytes(12).toString('hex')}`;
  const first = new Map();
  const claims = [];
  for (const it of items) {
    const { key, digest = Buffer.alloc(0) } = typeof it === 'string' ? { key: it } : it;
    if (!first.has(key)) {
      first.set(key, claims.length);
      claims.push({ key, digest, leaseTtl, owner: me });
    }
  }
  const outcomes = claims.map(({ key }) => ({ key, outcome: null, error: null }));
  const run = [];
  (await client.claimBatch(consumer, claims)).forEach(({ value: claim, error }, i) => {
    if (error) outcomes[i].error = error;
    else if (claim.outcome === 'OUTCOME_COMPLETED') outcomes[i].outcome = { result: claim.record.result, record: claim.record, replayed: true };
    else if (claim.outcome === 'OUTCOME_REJECTED') outcomes[i].error = new Rejected(claim.record, true);
    else if (claim.outcome === 'OUTCOME_IN_PROGRESS' && claim.record.owner !== me) {
      outcomes[i].error = new InProgressTimeout(`${consumer}/${claims[i].key} is in progress (owner ${claim.record.owner})`, { record: claim.record });
    } else run.push({ out: outcomes[i], key: claims[i].key, record: claim.record, controller: new AbortController() });
  });
  if (run.length) {
    await runAll(client, consumer, run, fn, { leaseTtl, parallelism, every: heartbeatEvery || leaseTtl / 3, settle, signal });
  }
  return items.map((it) => {
    const key = typeof it === 'string' ? it : it.key;
    return { ...outcomes[first.get(key)], key };
  });
}

async function runAll(client, consumer, run, fn, { leaseTtl, parallelism, every, settle, signal }) {
  const beat = new BatchHeartbeat(client, consumer, run, leaseTtl, every);
  let next = 0;
  const worker = async () => {
    while (next < run.length) {
      const r = run[next++];
      const unlink = linkSignal(signal, r.controller);
      await runOne(r, fn, settle, signal);
      unlink();
      beat.finished(r);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallelism, run.length)) }, worker));
  await beat.stop();
  for (const r of run) if (r.pending) r.out.error = r.err;
  const finishing = run.filter((r) => !r.pending);
  if (!finishing.length) return;
  const finish = finishing.map(({ key, record, result, err }) => {
    const fencingToken = record.fencingToken;
    if (err === undefined) return { key, fencingToken, result: toBuffer(result) };
    if (err instanceof Terminal) return { key, fencingToken, rejection: { reason: err.reason, message: err.rejectionMessage, detail: err.detail } };
    return { key, fencingToken, rejection: { reason: RETRYABLE_REASON, message: errorText(err), retryable: true } };
  });
  let answers;
  try {
    answers = await client.finishBatch(consumer, finish);
  } catch (whole) {
    for (const r of finishing) r.out.error = r.err === undefined ? whole : r.err;
    return;
  }
  finishing.forEach((r, i) => {
    const { value: record, error } = answers[i];
    if (r.err === undefined) {
      if (error) r.out.error = beat.lost.get(r.key) || error;
      else r.out.outcome = { result: record.result, record, replayed: false, settled: Boolean(r.settled) };
    } else if (r.err instanceof Terminal && !error) {
      r.out.error = new Rejected(record, false, r.err);
    } else {
      r.out.error = r.err; // fn's own error: the key was released (or its lease is gone)
    }
  });
}

/**
 * Settles, then runs fn for one acquired key. Sets r.result (and r.settled),
 * or r.err; r.pending marks an unknown outcome that must stay PENDING:
 * settle threw, or fn's error leaves the outcome unknown (unknownOutcome).
 */
async function runOne(r, fn, settle, callerSignal) {
  const args = [r.key, r.record.fencingToken, r.record.attempts, r.controller.signal, r.record];
  let found;
  try {
    found = await runSettle(settle, r.record.attempts, args);
  } catch (err) {
    r.err = err;
    r.pending = true;
    return;
  }
  if (found.terminal) {
    r.err = found.terminal;
  } else if (found.settled) {
    r.result = found.result;
    r.settled = true;
  } else {
    try {
      r.result = await fn(...args);
    } catch (err) {
      r.err = err;
      r.pending = unknownOutcome(err, callerSignal);
    }
  }
}

/** Extends the leases still running every `every` seconds in one extendLeaseBatch. */
class BatchHeartbeat {
  constructor(client, consumer, run, leaseTtl, every) {
    this.running = new Set(run);
    this.lost = new Map();
    this.inflight = Promise.resolve();
    this.timer = setInterval(() => {
      const beating = [...this.running];
      if (!beating.length) return;
      this.inflight = client.extendLeaseBatch(consumer, beating.map((r) => ({ key: r.key, fencingToken: r.record.fencingToken, leaseTtl })))
        .then((answers) => answers.forEach(({ error }, i) => {
          if (error instanceof LeaseLost || error instanceof AlreadyFinished || error instanceof RecordNotFound) {
            this.lost.set(beating[i].key, error);
            this.finished(beating[i]);
            beating[i].controller.abort(error);
          }
        }))
        .catch(() => {}); // transient: the next beat tries again within the lease
    }, every * 1000);
  }

  finished(r) {
    this.running.delete(r);
  }

  async stop() {
    clearInterval(this.timer);
    await this.inflight;
  }
}

module.exports = { doBatch };
