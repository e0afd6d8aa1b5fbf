'use strict';
// Batch calls and doBatch() against a real dedupd.

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');

const dedupd = require('../src');
const { withClient, uniqueKey, sleep } = require('../testing/server');

const CONSUMER = 'node-batch';

describe('batch calls', () => {
  let c;
  withClient((client) => { c = client; });

  it('answers each item as its lone call would', async () => {
    const [a, b] = [uniqueKey(), uniqueKey()];
    const claimed = await c.claimBatch(CONSUMER, [{ key: a, digest: Buffer.from('d') }, b, { key: a, digest: Buffer.from('d') }, '']);
    assert.deepEqual(claimed.map((r) => r.value && r.value.outcome),
      ['OUTCOME_ACQUIRED', 'OUTCOME_ACQUIRED', 'OUTCOME_IN_PROGRESS', null]);
    assert.ok(claimed[3].error instanceof dedupd.InvalidRequest, claimed[3].error);
    assert.equal(claimed[3].error.metadata.field, 'items[3].key');

    const [tokenA, tokenB] = [claimed[0].value.fencingToken, claimed[1].value.fencingToken];
    const extended = await c.extendLeaseBatch(CONSUMER, [{ key: a, fencingToken: tokenA, leaseTtl: 60 }, { key: b, fencingToken: BigInt(tokenB) + 5n }]);
    assert.equal(extended[0].error, null);
    assert.ok(extended[1].error instanceof dedupd.LeaseLost, extended[1].error);

    const finished = await c.finishBatch(CONSUMER, [
      { key: a, fencingToken: tokenA, result: 'ok' },
      { key: b, fencingToken: tokenB, rejection: { reason: 'NO' } },
      { key: a, fencingToken: tokenA, result: 'other' },
    ]);
    assert.equal(finished[0].value.state, 'STATE_COMPLETED');
    assert.equal(finished[1].value.state, 'STATE_REJECTED');
    assert.ok(finished[2].error instanceof dedupd.AlreadyFinished, finished[2].error);
    assert.equal(finished[2].error.record.result.toString(), 'ok');

    const looked = await c.lookupBatch(CONSUMER, [a, uniqueKey()]);
    assert.equal(looked[0].value.result.toString(), 'ok');
    assert.ok(looked[1].error instanceof dedupd.RecordNotFound, looked[1].error);
  });

  it('refuses the whole call for an invalid consumer', async () => {
    await assert.rejects(c.claimBatch('Not Valid', ['k']), dedupd.InvalidRequest);
  });
});

describe('doBatch', () => {
  let c;
  withClient((client) => { c = client; });

  it('runs, replays, rejects and releases, each key once', async () => {
    const [m1, m2, refuse, flaky] = [uniqueKey(), uniqueKey(), uniqueKey(), uniqueKey()];
    const calls = new Map();
    const fn = async (key, token) => {
      calls.set(key, (calls.get(key) || 0) + 1);
      if (key === refuse) throw new dedupd.Terminal('NO', 'refused');
      if (key === flaky) throw new Error('try again');
      return `done ${key}/${token}`;
    };
    const poll = [m1, { key: m2, digest: Buffer.from('d') }, refuse, flaky, m1];
    const first = await dedupd.doBatch(c, CONSUMER, poll, fn, { parallelism: 2 });
    assert.equal(first[0].outcome.result.toString(), `done ${m1}/1`);
    assert.equal(first[0].outcome.replayed, false);
    assert.equal(first[4].outcome.result.toString(), `done ${m1}/1`);
    assert.equal(calls.get(m1), 1);
    assert.ok(first[2].error instanceof dedupd.Rejected, first[2].error);
    assert.equal(first[3].error.message, 'try again');

    const again = await dedupd.doBatch(c, CONSUMER, poll, fn);
    assert.equal(again[0].outcome.replayed, true);
    assert.equal(again[2].error.replayed, true);
    assert.equal(calls.get(flaky), 2); // released, so it ran again
    assert.equal(calls.get(m1), 1);
  });

  it('heartbeats a slow poll in one call and does not wait for a held key', async () => {
    const keys = [uniqueKey(), uniqueKey(), uniqueKey()];
    const held = await c.claim(CONSUMER, keys[2], { leaseTtl: 60 });
    assert.equal(held.outcome, 'OUTCOME_ACQUIRED');
    const beats = [];
    const real = c.extendLeaseBatch.bind(c);
    c.extendLeaseBatch = (consumer, items) => { beats.push(items.length); return real(consumer, items); };
    try {
      const out = await dedupd.doBatch(c, CONSUMER, keys, async () => {
        const deadline = Date.now() + 10000;
        while (beats.length < 2 && Date.now() < deadline) await sleep(20);
        return 'ok';
      }, { leaseTtl: 0.3, heartbeatEvery: 0.1 });
      assert.ok(beats.length >= 2, `${beats.length} heartbeats`);
      assert.equal(beats[0], 2);
      assert.equal(out[0].error, null);
      assert.equal(out[1].error, null);
      assert.ok(out[2].error instanceof dedupd.InProgressTimeout, out[2].error);
    } finally {
      delete c.extendLeaseBatch;
    }
  });
});
