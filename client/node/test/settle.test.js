'use strict';
// The settle hook of do() and reconcile() against a real dedupd. The oracle
// is a fake gateway: `charges` maps a key to the charge an earlier holder
// made (or to nothing), as a payment provider's lookup by event id would.
// A crashed holder is a claim with a short lease that nobody completes.

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');

const dedupd = require('../src');
const { withClient, uniqueKey, sleep } = require('../testing/server');

const CONSUMER = 'node-settle';

/** A holder that claims key and dies (its lease of 0.2 s runs out), after its charge if charged is set. */
async function crashedHolder(c, key, charges, charged) {
  await c.claim(CONSUMER, key, { leaseTtl: 0.2, owner: 'crashed' });
  if (charged) charges.set(key, charged);
  await sleep(300);
}

/** A spy that records its arguments and answers with answer(...args). */
function spy(answer) {
  const f = async (...args) => {
    f.calls.push(args);
    return answer(...args);
  };
  f.calls = [];
  return f;
}

describe('do with settle', () => {
  let c;
  withClient((client) => { c = client; });

  it('does not call settle on attempt 1; fn gets the token, attempt, signal and record', async () => {
    const key = uniqueKey();
    const settle = spy(() => 'never');
    const fn = spy(() => 'charge-1');
    const out = await dedupd.do(c, CONSUMER, key, fn, { settle });
    assert.equal(settle.calls.length, 0);
    assert.equal(fn.calls.length, 1);
    const [token, attempt, signal, record] = fn.calls[0];
    assert.equal(token, '1');
    assert.equal(attempt, '1');
    assert.ok(signal instanceof AbortSignal);
    assert.equal(signal.aborted, false);
    assert.equal(record.key, key);
    assert.equal(record.state, 'STATE_PENDING');
    assert.equal(record.fencingToken, '1');
    assert.equal(out.settled, false);
    assert.equal(out.result.toString(), 'charge-1');
  });

  it('completes with what settle found after a crash after the effect, without running fn', async () => {
    const key = uniqueKey();
    const charges = new Map();
    await crashedHolder(c, key, charges, 'charge-by-crashed');
    const settle = spy((token, attempt, signal, record) => charges.get(record.key) ?? null);
    const fn = spy(() => 'charged-again');
    const out = await dedupd.do(c, CONSUMER, key, fn, { settle });
    assert.equal(fn.calls.length, 0);
    assert.equal(settle.calls.length, 1);
    const [token, attempt, signal, record] = settle.calls[0];
    assert.deepEqual([token, attempt, record.key], ['2', '2', key]);
    assert.ok(signal instanceof AbortSignal);
    assert.equal(out.settled, true);
    assert.equal(out.replayed, false);
    const stored = await c.lookup(CONSUMER, key);
    assert.equal(stored.state, 'STATE_COMPLETED');
    assert.equal(stored.result.toString(), 'charge-by-crashed');
  });

  it('runs fn when settle finds nothing (after a crash before the effect, and after a release)', async () => {
    const crashed = uniqueKey();
    const charges = new Map();
    await crashedHolder(c, crashed, charges, null);
    const settle = spy((token, attempt, signal, record) => charges.get(record.key) ?? null);
    const fn = spy((token) => `charge-${token}`);
    const out = await dedupd.do(c, CONSUMER, crashed, fn, { settle });
    assert.deepEqual([settle.calls.length, fn.calls.length, out.settled], [1, 1, false]);
    assert.equal((await c.lookup(CONSUMER, crashed)).result.toString(), 'charge-2');

    const released = uniqueKey();
    await assert.rejects(dedupd.do(c, CONSUMER, released, () => { throw new Error('gateway 502'); }, { settle }), /gateway 502/);
    assert.equal((await c.lookup(CONSUMER, released)).state, 'STATE_RELEASED');
    const again = await dedupd.do(c, CONSUMER, released, fn, { settle });
    assert.equal(settle.calls.length, 2, 'the acquisition after a release runs settle');
    assert.equal(settle.calls[1][1], '2');
    assert.equal(again.result.toString(), 'charge-2');
  });

  it('leaves the claim PENDING when settle throws, and settles on the next acquisition', async () => {
    const key = uniqueKey();
    const charges = new Map();
    await crashedHolder(c, key, charges, 'charge-by-crashed');
    const fn = spy(() => 'charged-again');
    const down = new Error('gateway lookup timed out');
    await assert.rejects(dedupd.do(c, CONSUMER, key, fn, { settle: () => { throw down; }, leaseTtl: 0.3 }), (err) => err === down);
    const left = await c.lookup(CONSUMER, key);
    assert.equal(left.state, 'STATE_PENDING');
    assert.equal(left.fencingToken, '2');
    await sleep(400);
    const settle = spy((token, attempt, signal, record) => charges.get(record.key) ?? null);
    const out = await dedupd.do(c, CONSUMER, key, fn, { settle });
    assert.equal(settle.calls[0][1], '3');
    assert.equal(out.result.toString(), 'charge-by-crashed');
    assert.equal(fn.calls.length, 0);
  });

  it('leaves the claim PENDING when settle returns undefined', async () => {
    const key = uniqueKey();
    await crashedHolder(c, key, new Map(), null);
    const fn = spy(() => 'x');
    await assert.rejects(dedupd.do(c, CONSUMER, key, fn, { settle: () => undefined }), TypeError);
    assert.equal((await c.lookup(CONSUMER, key)).state, 'STATE_PENDING');
    assert.equal(fn.calls.length, 0);
  });

  it('stores a Terminal rejection from settle', async () => {
    const key = uniqueKey();
    await crashedHolder(c, key, new Map(), null);
    const fn = spy(() => 'x');
    const settle = () => { throw new dedupd.Terminal('CARD_DECLINED', 'declined at the first try'); };
    await assert.rejects(dedupd.do(c, CONSUMER, key, fn, { settle }), (err) => {
      assert.ok(err instanceof dedupd.Rejected, err);
      assert.equal(err.replayed, false);
      assert.equal(err.rejection.reason, 'CARD_DECLINED');
      return true;
    });
    assert.equal((await c.lookup(CONSUMER, key)).state, 'STATE_REJECTED');
    assert.equal(fn.calls.length, 0);
  });

  it("keeps the claim PENDING when fn fails after the caller's signal aborted", async () => {
    const key = uniqueKey();
    const ac = new AbortController();
    const fn = async (token, attempt, signal) => {
      setTimeout(() => ac.abort(new Error('shutting down')), 10);
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      throw signal.reason; // cancelled mid-effect: the charge may have gone out
    };
    await assert.rejects(dedupd.do(c, CONSUMER, key, fn, { signal: ac.signal }), /shutting down/);
    const left = await c.lookup(CONSUMER, key);
    assert.equal(left.state, 'STATE_PENDING');
    // An aborted signal stops do() before it claims anything.
    const other = uniqueKey();
    await assert.rejects(dedupd.do(c, CONSUMER, other, fn, { signal: ac.signal }), /shutting down/);
    await assert.rejects(c.lookup(CONSUMER, other), dedupd.RecordNotFound);
  });
  it('keeps the claim PENDING after a timeout (the request may have done its work); releases a plain error', async () => {
    const key = uniqueKey();
    const timedOut = () => { throw new DOMException('The operation was aborted due to timeout', 'TimeoutError'); };
    await assert.rejects(dedupd.do(c, CONSUMER, key, timedOut), (err) => err.name === 'TimeoutError');
    assert.equal((await c.lookup(CONSUMER, key)).state, 'STATE_PENDING');
    const plain = uniqueKey();
    await assert.rejects(dedupd.do(c, CONSUMER, plain, () => { throw new TypeError('bug before the effect'); }), TypeError);
    assert.equal((await c.lookup(CONSUMER, plain)).state, 'STATE_RELEASED');
  });
});

describe('reconcile with settle', () => {
  let c;
  withClient((client) => { c = client; });

  it('serves do() and reconcile() with one settle function', async () => {
    const charges = new Map();
    const charged = uniqueKey('a');
    const notCharged = uniqueKey('b');
    await c.claim(CONSUMER, charged, { leaseTtl: 0.2, owner: 'crashed' });
    await c.claim(CONSUMER, notCharged, { leaseTtl: 0.2, owner: 'crashed' });
    charges.set(charged, 'charge-a');
    await sleep(300);
    const settle = spy((token, attempt, signal, record) => charges.get(record.key) ?? null);
    const settled = await dedupd.reconcile(c, CONSUMER, { settle });
    const byKey = new Map(settled.map((s) => [s.key, s.record]));
    assert.equal(byKey.get(charged).state, 'STATE_COMPLETED');
    assert.equal(byKey.get(charged).result.toString(), 'charge-a');
    assert.equal(byKey.get(notCharged).state, 'STATE_RELEASED');
    assert.equal(settle.calls.length, 2);
    assert.ok(settle.calls.every(([token, attempt, signal]) => attempt === '2' && signal instanceof AbortSignal && token === '2'));
    // The released key runs fn on the next do(), after settle finds nothing again.
    const out = await dedupd.do(c, CONSUMER, notCharged, () => 'charge-b', { settle });
    assert.equal(out.result.toString(), 'charge-b');
    assert.equal(settle.calls.length, 3);
  });

  it('leaves the claim PENDING and rethrows when settle throws', async () => {
    const key = uniqueKey('c');
    await c.claim(`${CONSUMER}-r`, key, { leaseTtl: 0.2, owner: 'crashed' });
    await sleep(300);
    const down = new Error('lookup down');
    await assert.rejects(dedupd.reconcile(c, `${CONSUMER}-r`, { settle: () => { throw down; } }), (err) => err === down);
    const left = await c.lookup(`${CONSUMER}-r`, key);
    assert.equal(left.state, 'STATE_PENDING');
    assert.equal(left.owner, 'reconciler');
  });
});
