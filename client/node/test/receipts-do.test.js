'use strict';
// do() and reconcile() with receipts, against a real dedupd and a real
// PostgreSQL: no hand-written settle. The oracle is the model of effects
// (testing/receipts.js): every effect that committed is a row, so "no
// repeated effect" is a count. A crash is an error marked outcomeUnknown,
// which do() leaves PENDING without a release, as a killed process would;
// its lease (0.3 s, no heartbeat before it runs out) then expires.

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');

const dedupd = require('../src');
const { Receipts, StaleReceipt, UnknownOutcome, ttlFromPolicy } = require('../src/receipts');
const { adminStub } = require('../src/receiptpolicy');
const { withClient, uniqueKey, sleep } = require('../testing/server');
const { forEachBackend, effectOf, stateOf, BACKENDS } = require('../testing/receipts');

let c;
withClient((client) => { c = client; });

const LEASE = { leaseTtl: 0.3, heartbeatEvery: 60 };
const crash = () => Object.assign(new Error('the process died'), { outcomeUnknown: true });

/** Runs do() for a holder that dies after fn (a crash error: the claim stays PENDING), then lets its lease run out. */
async function crashAfter(r, key, fn) {
  await assert.rejects(dedupd.do(c, r.consumer, key, async (...args) => {
    await fn(...args);
    throw crash();
  }, LEASE), /the process died/);
  await sleep(400);
}

forEachBackend('do with receipts', (env) => {
  const receipts = () => new Receipts({ pool: env.pool, isolation: env.isolation, consumer: `node-receipts-${uniqueKey('c').slice(-12)}`, ttl: 3600 });

  env.it('settles a takeover from the receipt when the holder died after its commit, the effect once', async () => {
    const r = receipts();
    await crashAfter(r, 'E1', r.effect(effectOf('done')));
    const fn = r.effect(effectOf('again'));
    const taken = await dedupd.do(c, r.consumer, 'E1', fn, { settle: r.settle });
    assert.deepEqual([taken.settled, taken.replayed, taken.result.toString()], [true, false, 'done']);
    const third = await dedupd.do(c, r.consumer, 'E1', fn, { settle: r.settle });
    assert.deepEqual([third.replayed, third.result.toString()], [true, 'done']);
    const one = { token: '1', result: 'done' };
    assert.deepEqual(await stateOf(env.pool, 'E1'), { effects: [one], receipts: [one] });
  });

  env.it('runs the effect on a takeover when the holder died before its commit', async () => {
    const r = receipts();
    await crashAfter(r, 'E1', r.effect(async () => { throw crash(); }));
    const taken = await dedupd.do(c, r.consumer, 'E1', r.effect(effectOf('now')), { settle: r.settle });
    assert.deepEqual([taken.settled, taken.result.toString()], [false, 'now']);
    const one = { token: '2', result: 'now' };
    assert.deepEqual(await stateOf(env.pool, 'E1'), { effects: [one], receipts: [one] });
  });

  // The first holder stalls inside its transaction past its lease; the
  // second takes over, finds no receipt, runs the effect and completes.
  // When the first resumes, its receipt is stale: its transaction rolls
  // back and its effect is invisible.
  env.it('rolls back a stalled holder overtaken by a takeover', async () => {
    const r = receipts();
    let resume;
    const resumed = new Promise((resolve) => { resume = resolve; });
    let stalled;
    const isStalled = new Promise((resolve) => { stalled = resolve; });
    const first = dedupd.do(c, r.consumer, 'E1', r.effect(async (client, info) => {
      stalled();
      await resumed;
      return effectOf('first')(client, info);
    }), LEASE).then(() => null, (err) => err);
    await isStalled;
    await sleep(400);
    const taken = await dedupd.do(c, r.consumer, 'E1', r.effect(effectOf('second')), { settle: r.settle });
    assert.deepEqual([taken.settled, taken.result.toString()], [false, 'second']);
    resume();
    const err = await first;
    assert.ok(err instanceof StaleReceipt, `the stalled holder ended in ${err}`);
    const one = { token: '2', result: 'second' };
    assert.deepEqual(await stateOf(env.pool, 'E1'), { effects: [one], receipts: [one] });
    const stored = await c.lookup(r.consumer, 'E1');
    assert.deepEqual([stored.state, stored.result.toString()], ['STATE_COMPLETED', 'second']);
  });

  // 40003 (CockroachDB's "result is ambiguous"; raised here by the effect,
  // as PostgreSQL never sends it) is an unknown outcome: do() neither
  // completes nor releases, and the claim stays PENDING for settle.
  env.it('leaves the claim PENDING on an unknown outcome, never completed', async () => {
    const r = receipts();
    const ambiguous = Object.assign(new Error('result is ambiguous'), { code: '40003' });
    const err = await dedupd.do(c, r.consumer, 'E1', r.effect(() => { throw ambiguous; })).then(() => null, (e) => e);
    assert.ok(err instanceof UnknownOutcome && err.cause === ambiguous, `do() ended in ${err}`);
    const stored = await c.lookup(r.consumer, 'E1');
    assert.deepEqual([stored.state, stored.attempts], ['STATE_PENDING', '1']);
  });

  env.it('settles a doBatch() poll from receipts: the committed key is not run again, the new one is', async () => {
    const r = receipts();
    await crashAfter(r, 'old', r.effect(effectOf('was done')));
    const outcomes = await dedupd.doBatch(c, r.consumer, ['old', 'new'], r.batchEffect(effectOf('done now')), { settle: r.settle });
    assert.deepEqual(outcomes.map((o) => [o.key, o.error, o.outcome.settled, o.outcome.result.toString()]),
      [['old', null, true, 'was done'], ['new', null, false, 'done now']]);
    assert.deepEqual((await stateOf(env.pool, 'old')).effects, [{ token: '1', result: 'was done' }]);
    assert.deepEqual((await stateOf(env.pool, 'new')).effects, [{ token: '1', result: 'done now' }]);
  });

  env.it('lets reconcile() settle from receipts: complete what committed, release what did not', async () => {
    const r = receipts();
    await crashAfter(r, 'done', r.effect(effectOf('ok')));
    await crashAfter(r, 'lost', r.effect(async () => { throw crash(); }));
    const settled = await dedupd.reconcile(c, r.consumer, { settle: r.settle });
    const byKey = Object.fromEntries(settled.map((s) => [s.key, s]));
    assert.deepEqual(Object.keys(byKey).sort(), ['done', 'lost']);
    assert.deepEqual([byKey.done.record.state, byKey.done.record.result.toString()], ['STATE_COMPLETED', 'ok']);
    assert.equal(byKey.lost.record.state, 'STATE_RELEASED');
    assert.deepEqual((await stateOf(env.pool, 'lost')).effects, []);
  });
}, BACKENDS.slice(0, 2)); // read committed and serializable: receipts.test.js covers the session default

describe('ttlFromPolicy', () => {
  it('reads the consumer\'s completed retention from dedupd', async () => {
    const consumer = `node-receipts-policy-${uniqueKey('c').slice(-12)}`;
    await c.call('SetPolicy', { policy: { consumer, completedTtl: { seconds: 36 * 3600, nanos: 0 } } }, adminStub(c));
    assert.equal(await ttlFromPolicy(c, consumer), 36 * 3600);
    await assert.rejects(ttlFromPolicy(c, ''), dedupd.InvalidRequest);
  });
});
