'use strict';
// reconcile() and ListRecords against a real dedupd: claims whose holder
// crashed are found, taken over and settled as the caller's system says.

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');

const dedupd = require('../src');
const { withClient, uniqueKey, sleep } = require('../testing/server');

/** Waits until ListRecords lists every key as an expired claim. */
async function waitExpired(c, consumer, keys, bound = 20) {
  const deadline = Date.now() + bound * 1000;
  for (;;) {
    const listed = new Set();
    for await (const r of c.iterRecords(consumer, { leaseExpired: true })) listed.add(r.key);
    if (keys.every((k) => listed.has(k))) return;
    if (Date.now() > deadline) throw new Error(`claims never listed as expired: ${keys.filter((k) => !listed.has(k))}`);
    await sleep(50);
  }
}

describe('reconcile', () => {
  let c;
  withClient((client) => { c = client; });

  it('settles crashed claims as the caller decides', async () => {
    const consumer = `node-reconcile-${uniqueKey('c').slice(-12)}`;
    const names = ['effect-done', 'effect-refused', 'effect-missing'];
    const crashed = {};
    for (const name of names) {
      crashed[name] = await c.claim(consumer, name, { digest: dedupd.digestBytes(name), leaseTtl: 0.2, owner: 'crashed' });
    }
    const live = await c.claim(consumer, 'still-working', { leaseTtl: 600 });
    const finished = await c.claim(consumer, 'finished');
    await c.complete(consumer, 'finished', finished.fencingToken, 'ok');
    await waitExpired(c, consumer, names);

    // What the caller's own system says happened to each crashed claim.
    const truth = {
      'effect-done': { complete: Buffer.from('found in orders table') },
      'effect-refused': { reject: { reason: 'CUSTOMER_GONE', message: 'account closed' } },
      'effect-missing': { release: {} },
    };
    const seen = [];
    const decide = async (record, token) => {
      seen.push([record.key, record.owner, token]);
      return truth[record.key];
    };
    const settled = await dedupd.reconcile(c, consumer, decide, { pageSize: 2 });
    assert.deepEqual(settled.map((s) => s.key).sort(), [...names].sort());
    assert.deepEqual(seen.map(([k]) => k).sort(), [...names].sort());
    for (const [key, owner, token] of seen) {
      assert.equal(owner, 'reconciler');
      assert.equal(BigInt(token), BigInt(crashed[key].fencingToken) + 1n);
    }

    const done = await c.lookup(consumer, 'effect-done');
    assert.equal(done.state, 'STATE_COMPLETED');
    assert.equal(done.result.toString(), 'found in orders table');
    const refused = await c.lookup(consumer, 'effect-refused');
    assert.equal(refused.state, 'STATE_REJECTED');
    assert.equal(refused.rejection.reason, 'CUSTOMER_GONE');
    assert.equal((await c.lookup(consumer, 'effect-missing')).state, 'STATE_RELEASED');

    // The crashed holder, waking up, is fenced out.
    await assert.rejects(c.complete(consumer, 'effect-done', crashed['effect-done'].fencingToken, 'x'), dedupd.LeaseLost);
    // Nothing is left to reconcile; the live claim was never touched.
    assert.deepEqual(await dedupd.reconcile(c, consumer, decide), []);
    assert.equal((await c.lookup(consumer, 'still-working')).fencingToken, live.fencingToken);
    // The released key runs again on redelivery.
    const redelivered = await c.claim(consumer, 'effect-missing', { digest: dedupd.digestBytes('effect-missing') });
    assert.equal(redelivered.outcome, 'OUTCOME_ACQUIRED');
  });

  it('releases the claim and rethrows when decide fails', async () => {
    const consumer = `node-reconcile-${uniqueKey('f').slice(-12)}`;
    const first = await c.claim(consumer, 'k', { leaseTtl: 0.2 });
    await waitExpired(c, consumer, ['k']);
    await assert.rejects(dedupd.reconcile(c, consumer, async () => { throw new Error('orders database down'); }), /orders database down/);
    const rec = await c.lookup(consumer, 'k');
    assert.equal(rec.state, 'STATE_RELEASED');
    assert.equal(BigInt(rec.fencingToken), BigInt(first.fencingToken) + 1n);
  });
});
