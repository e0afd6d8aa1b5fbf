'use strict';
// reconcile(): settle the claims whose lease ran out. A PENDING record past
// its lease belongs to a caller that crashed somewhere between Claim and
// Complete: its side effect may or may not have happened, and only the
// caller's own system can tell. reconcile() lists them (ListRecords with
// leaseExpired), takes each one over with a Claim (fencing out the crashed
// holder), asks decide(record, token) what happened, and records it:
//   {complete: result}                  the effect happened
//   {reject: {reason, message, detail}} refuse the key for good
//   {release: {reason, message}}        the effect did not happen; run it again

const { DedupError } = require('./errors');

async function reconcile(client, consumer, decide, { leaseTtl = 30, owner = 'reconciler', pageSize = 100 } = {}) {
  const settled = [];
  for await (const expired of client.iterRecords(consumer, { leaseExpired: true, pageSize })) {
    const claim = await client.claim(consumer, expired.key, { digest: expired.digest, leaseTtl, owner });
    if (claim.outcome !== 'OUTCOME_ACQUIRED') {
      settled.push({ key: expired.key, decision: null, record: claim.record });
      continue;
    }
    settled.push(await settle(client, consumer, claim, decide));
  }
  return settled;
}

async function settle(client, consumer, claim, decide) {
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
    await release();
    throw err;
  }
  let record;
  if (decision && 'complete' in decision) {
    record = await client.complete(consumer, key, token, decision.complete);
  } else if (decision && decision.reject) {
    record = await client.reject(consumer, key, token, { ...decision.reject, retryable: false });
  } else if (decision && 'release' in decision) {
    record = await client.reject(consumer, key, token, { reason: 'RECONCILED', ...decision.release, retryable: true });
  } else {
    await release();
    throw new TypeError(`decide must return {complete}, {reject} or {release}, not ${JSON.stringify(decision)}`);
  }
  return { key, decision, record };
}

module.exports = { reconcile };
