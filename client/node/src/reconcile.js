'use strict';
// reconcile(): settle the claims whose lease ran out. A PENDING record past
// its lease belongs to a caller that crashed somewhere between Claim and
// Complete: its side effect may or may not have happened, and only the
// caller's own system can tell. reconcile() lists them (ListRecords with
// leaseExpired), takes each one over with a Claim (fencing out the crashed
// holder), asks what happened, and records it. It asks one of two ways:
//
// decide(record, token) returns a decision:
//   {complete: result}                  the effect happened
//   {reject: {reason, message, detail}} refuse the key for good
//   {release: {reason, message}}        the effect did not happen; run it again
//
// {settle}, the function do() takes as its settle option, is called as do()
// calls it, settle(token, attempt, signal, record), so one function serves
// both: a result completes, null releases, Terminal rejects, and any other
// error leaves the claim PENDING (the outcome is still unknown) and is
// rethrown.

const { DedupError } = require('./errors');
const { Heartbeat } = require('./do');
const { runSettle } = require('./settle');

async function reconcile(client, consumer, decide, { leaseTtl = 30, owner = 'reconciler', pageSize = 100 } = {}) {
  const settled = [];
  for await (const expired of client.iterRecords(consumer, { leaseExpired: true, pageSize })) {
    const claim = await client.claim(consumer, expired.key, { digest: expired.digest, leaseTtl, owner });
    if (claim.outcome !== 'OUTCOME_ACQUIRED') {
      settled.push({ key: expired.key, decision: null, record: claim.record });
      continue;
    }
    const decideNow = typeof decide === 'function' ? decide : settleDecision(client, consumer, claim, decide.settle, leaseTtl);
    settled.push(await record(client, consumer, claim, decideNow));
  }
  return settled;
}

/**
 * A decide for a settle function: settle runs as do() runs it (the attempt
 * is always above 1 here, a takeover) under a heartbeat, and its answer
 * becomes a decision. Its own error rejects with {leavePending: true}.
 */
function settleDecision(client, consumer, claim, settle, leaseTtl) {
  if (typeof settle !== 'function') throw new TypeError('reconcile takes decide(record, token) or {settle}');
  return async (rec, token) => {
    const beat = new Heartbeat(client, consumer, rec.key, token, leaseTtl, leaseTtl / 3);
    let found;
    try {
      found = await runSettle(settle, null, [token, rec.attempts, beat.controller.signal, rec]);
    } catch (err) {
      throw Object.assign(new Error('settle failed'), { leavePending: true, cause: err });
    } finally {
      await beat.stop();
    }
    if (found.terminal) return { reject: { reason: found.terminal.reason, message: found.terminal.rejectionMessage, detail: found.terminal.detail } };
    return found.settled ? { complete: found.result } : { release: { reason: 'RECONCILED', message: 'settle found no effect' } };
  };
}

async function record(client, consumer, claim, decide) {
  const { key } = claim.record;
  const token = claim.fencingToken;
  const release = async () => {
    try {
      await client.reject(consumer, key, token, { reason: 'RECONCILE_FAILED', retryable: true });
    } catch (err) {
      if (!(err instanceof DedupError)) throw err; // our lease runs out anyway
    }
  };
  let decision;
  try {
    decision = await decide(claim.record, token);
  } catch (err) {
    if (err && err.leavePending) throw err.cause;
    await release();
    throw err;
  }
  let stored;
  if (decision && 'complete' in decision) {
    stored = await client.complete(consumer, key, token, decision.complete);
  } else if (decision && decision.reject) {
    stored = await client.reject(consumer, key, token, { ...decision.reject, retryable: false });
  } else if (decision && 'release' in decision) {
    stored = await client.reject(consumer, key, token, { reason: 'RECONCILED', ...decision.release, retryable: true });
  } else {
    await release();
    throw new TypeError(`decide must return {complete}, {reject} or {release}, not ${JSON.stringify(decision)}`);
  }
  return { key, decision, record: stored };
}

module.exports = { reconcile };
