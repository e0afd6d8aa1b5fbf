'use strict';
// The settle hook of doBatch() and doInOrder() against a real dedupd, with
// the same oracle as settle.test.js: a map of the charges earlier holders
// made, keyed as a payment provider's lookup by event id would be.

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');

const dedupd = require('../src');
const { withClient, uniqueKey, sleep } = require('../testing/server');

const CONSUMER = 'node-settle-batch';

describe('doBatch with settle', () => {
  let c;
  withClient((client) => { c = client; });

  it('settles each taken-over key on its own: found, not found, throws, Terminal; fresh keys skip it', async () => {
    const [fresh, found, missing, failing, refused] = ['f', 'found', 'm', 'x', 'r'].map(uniqueKey);
    const charges = new Map([[found, 'charge-found']]);
    for (const key of [found, missing, failing, refused]) await c.claim(CONSUMER, key, { leaseTtl: 0.2, owner: 'crashed' });
    await sleep(300);
    const down = new Error('lookup down');
    const settleCalls = [];
    const settle = async (key, token, attempt, signal, record) => {
      settleCalls.push({ key, token, attempt, signal, record });
      if (key === failing) throw down;
      if (key === refused) throw new dedupd.Terminal('CARD_DECLINED');
      return charges.get(key) ?? null;
    };
    const fnCalls = [];
    const fn = async (key, token, attempt, signal, record) => {
      fnCalls.push({ key, token, attempt, signal, record });
      return `charge-${key}`;
    };
    const out = await dedupd.doBatch(c, CONSUMER, [fresh, found, missing, failing, refused], fn, { settle });
    const byKey = new Map(out.map((o) => [o.key, o]));
    assert.deepEqual(settleCalls.map((s) => s.key).sort(), [found, missing, failing, refused].sort());
    assert.ok(settleCalls.every((s) => s.attempt === '2' && s.token === '2' && s.record.key === s.key && s.signal instanceof AbortSignal));
    assert.deepEqual(fnCalls.map((f) => f.key).sort(), [fresh, missing].sort());
    const first = fnCalls.find((f) => f.key === fresh);
    assert.deepEqual([first.token, first.attempt, first.record.state], ['1', '1', 'STATE_PENDING']);
    assert.ok(first.signal instanceof AbortSignal);

    assert.equal(byKey.get(found).outcome.settled, true);
    assert.equal(byKey.get(found).outcome.result.toString(), 'charge-found');
    assert.equal(byKey.get(missing).outcome.settled, false);
    assert.equal(byKey.get(failing).error, down);
    assert.ok(byKey.get(refused).error instanceof dedupd.Rejected);
    const stored = new Map((await c.lookupBatch(CONSUMER, [fresh, found, missing, failing, refused])).map((r, i) => [[fresh, found, missing, failing, refused][i], r.value]));
    assert.equal(stored.get(fresh).result.toString(), `charge-${fresh}`);
    assert.equal(stored.get(found).state, 'STATE_COMPLETED');
    assert.equal(stored.get(found).result.toString(), 'charge-found');
    assert.equal(stored.get(missing).result.toString(), `charge-${missing}`);
    assert.equal(stored.get(failing).state, 'STATE_PENDING');
    assert.equal(stored.get(failing).fencingToken, '2');
    assert.equal(stored.get(refused).state, 'STATE_REJECTED');
  });

  it("leaves keys PENDING whose fn failed after the caller's signal aborted; releases the others", async () => {
    const [cancelled, failed] = ['c', 'e'].map(uniqueKey);
    const ac = new AbortController();
    const fn = async (key, token, attempt, signal) => {
      if (key === failed) throw new Error('gateway 502');
      ac.abort(new Error('shutting down'));
      if (signal.aborted) throw signal.reason;
      return 'unreachable';
    };
    const out = await dedupd.doBatch(c, CONSUMER, [failed, cancelled], fn, { signal: ac.signal, parallelism: 1 });
    assert.match(String(out[0].error), /gateway 502/);
    assert.match(String(out[1].error), /shutting down/);
    const [f, k] = await c.lookupBatch(CONSUMER, [failed, cancelled]);
    assert.equal(f.value.state, 'STATE_RELEASED');
    assert.equal(k.value.state, 'STATE_PENDING');
  });
});

describe('doInOrder with settle', () => {
  let c;
  withClient((client) => { c = client; });

  it('runs settle on every acquisition (a stream counts no attempts) with the same arguments as fn', async () => {
    const s = uniqueKey();
    const applied = new Map([[`${s}#2`, 'applied-by-crashed']]);
    const seen = [];
    const settle = async (token, attempt, signal, stream) => {
      seen.push({ token, attempt, signal, stream });
      return applied.get(`${stream.stream}#${stream.inFlight}`) ?? null;
    };
    const fnCalls = [];
    const fn = async (token, attempt, signal, stream) => {
      fnCalls.push({ token, attempt, signal, stream });
      applied.set(`${stream.stream}#${stream.inFlight}`, `applied-${token}`);
    };
    const one = await dedupd.doInOrder(c, CONSUMER, s, 1, fn, { settle });
    assert.deepEqual([one.settled, one.stream.highWater], [false, '1']);
    assert.equal(seen.length, 1);
    assert.deepEqual([seen[0].token, seen[0].attempt, seen[0].stream.inFlight], [one.stream.fencingToken, null, '1']);
    assert.ok(seen[0].signal instanceof AbortSignal && fnCalls[0].signal instanceof AbortSignal);
    assert.equal(fnCalls.length, 1);
    // Event 2 was applied by a holder that crashed before CompleteStream.
    await c.claimStream(CONSUMER, s, 2, { leaseTtl: 0.2, owner: 'crashed' });
    await sleep(300);
    const two = await dedupd.doInOrder(c, CONSUMER, s, 2, fn, { settle });
    assert.deepEqual([two.settled, two.stream.highWater], [true, '2']);
    assert.equal(fnCalls.length, 1, 'fn did not run again for event 2');
  });

  it('leaves the event in flight when settle throws; rejects it as poison on Terminal', async () => {
    const s = uniqueKey();
    const fn = async () => { throw new Error('fn must not run'); };
    const down = new Error('lookup down');
    await assert.rejects(dedupd.doInOrder(c, CONSUMER, s, 1, fn, { settle: () => { throw down; }, leaseTtl: 0.3 }), (err) => err === down);
    const left = await c.getStream(CONSUMER, s);
    assert.deepEqual([left.inFlight, left.highWater, left.fencingToken], ['1', '0', '1']);
    await sleep(400);
    await assert.rejects(dedupd.doInOrder(c, CONSUMER, s, 1, fn, { settle: () => { throw new dedupd.Terminal('POISON'); } }), (err) => {
      assert.ok(err instanceof dedupd.StreamRejected, err);
      assert.equal(err.stream.highWater, '1');
      assert.equal(err.stream.lastOutcome, 'STATE_REJECTED');
      return true;
    });
  });
});
