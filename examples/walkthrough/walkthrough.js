// The life of one event against a running dedupd, as in main.go and
// walkthrough.py: claim, complete, replay, a conflict, and a crashed claim
// settled by reconciliation. Exits non-zero if an answer differs from what
// dedupd promises.
//
//   (cd client/node && npm ci) && node examples/walkthrough/walkthrough.js
//
// dedupd's address is $DEDUPD_ADDR, or 127.0.0.1:7070. Its consumer,
// walkthrough-node, is its own: the reconcile step settles every expired
// claim of the consumer, so a shared one would settle another program's.
//
// It uses the installed package when there is one (npm install
// @dedupd/client; client/node/scripts/pack-install.js runs it that way),
// else this repository's copy.
'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');

function requireClient() {
  try {
    return require('@dedupd/client');
  } catch (err) {
    if (err.code !== 'MODULE_NOT_FOUND' || !err.message.includes("'@dedupd/client'")) throw err;
    return require(path.join(__dirname, '..', '..', 'client', 'node'));
  }
}
const dedupd = requireClient();

async function main() {
  const c = new dedupd.Client(process.env.DEDUPD_ADDR || '127.0.0.1:7070');
  const eventId = `E42-${process.hrtime.bigint()}`; // fresh per run, so it can run again
  const event = { event_id: eventId, item: 'widget', qty: 3 };
  const digest = dedupd.digestJSON(event); // 0x01 || SHA-256 of the RFC 8785 form

  // Claim, do the work, record the outcome: one call. fn gets the fencing
  // token (pass it to your own write) and an AbortSignal for a lost lease.
  const runs = [];
  const takeStock = async (token) => { runs.push(token); return 'stock=97'; };
  const first = await dedupd.do(c, 'walkthrough-node', eventId, takeStock, { digest });
  console.log(`first delivery: result=${first.result} replayed=${first.replayed}`);

  // Redelivery: the stored result comes back, takeStock does not run.
  const again = await dedupd.do(c, 'walkthrough-node', eventId, takeStock, { digest });
  console.log(`redelivery: result=${again.result} replayed=${again.replayed}`);
  assert.ok(!first.replayed && again.replayed && runs.length === 1, `the work ran ${runs.length} times`);

  // Same key, other content: a conflict, with the stored record attached.
  await assert.rejects(
    c.claim('walkthrough-node', eventId, { digest: dedupd.digestJSON({ ...event, qty: 4 }) }),
    (err) => {
      assert.ok(err instanceof dedupd.DigestMismatch, `got ${err}`);
      console.log(`other content: ${err.reason}, stored result=${err.record.result}`);
      return true;
    });

  // A whole poll in one claimBatch and one finishBatch, then redelivered:
  // every message is replayed and the work does not run again.
  const poll = [0, 1, 2, 3, 4].map((i) => `${eventId}-poll-${i}`);
  let pollRuns = 0;
  for (const delivery of ['poll', 'redelivered poll']) {
    const outcomes = await dedupd.doBatch(c, 'walkthrough-node', poll, async () => { pollRuns += 1; return 'done'; });
    assert.ok(outcomes.every((o) => o.error === null), outcomes);
    const replayed = outcomes.filter((o) => o.outcome.replayed).length;
    console.log(`${delivery} of ${poll.length}: replayed=${replayed}, work ran ${pollRuns} times in all`);
  }
  assert.equal(pollRuns, poll.length);

  // A worker crashes after claiming (its lease runs out, nothing recorded).
  const crashed = `${eventId}-crashed`;
  const claim = await c.claim('walkthrough-node', crashed,
    { digest: dedupd.digestBytes(Buffer.from(crashed)), leaseTtl: 0.5, owner: 'worker-that-died' });
  await new Promise((r) => setTimeout(r, 1000));

  // Reconcile: for each expired claim, ask your own system what happened.
  const decide = async () => {
    const effectHappened = false; // look the event up in your database
    return effectHappened ? { complete: 'stock=94' } : { release: {} };
  };
  const settled = (await dedupd.reconcile(c, 'walkthrough-node', decide)).filter((s) => s.key === crashed);
  const record = await c.lookup('walkthrough-node', crashed);
  console.log(`reconciled: ${crashed} is ${record.state} (token ${record.fencingToken}, the crashed worker had ${claim.fencingToken})`);
  assert.equal(settled.length, 1);
  assert.equal(record.state, 'STATE_RELEASED');
  assert.equal(BigInt(record.fencingToken), BigInt(claim.fencingToken) + 1n); // int64s are decimal strings
  c.close();
  console.log('walkthrough: ok');
}

main().catch((err) => { console.error(`walkthrough: ${err.stack || err}`); process.exit(1); });
