'use strict';
// do() against a real dedupd: run once, replay, reject, release, wait, time
// out, heartbeat and lose the lease.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');

const dedupd = require('../src');
const { withClient, startServer, uniqueKey, sleep, takeOver } = require('../testing/server');

const CONSUMER = 'node-do';

/** A fn for do() that records how it was called. */
function recorder({ result = 'done', throws } = {}) {
  const fn = async (token, attempt) => {
    fn.calls.push([token, attempt]);
    if (throws) throw throws;
    return result;
  };
  fn.calls = [];
  return fn;
}

describe('do', () => {
  let c;
  withClient((client) => { c = client; });

  it('runs fn once, then replays its result', async () => {
    const key = uniqueKey();
    const fn = recorder({ result: 'stored' });
    const first = await dedupd.do(c, CONSUMER, key, fn, { digest: dedupd.digestBytes('a') });
    assert.equal(first.replayed, false);
    assert.equal(first.result.toString(), 'stored');
    assert.deepEqual(fn.calls, [['1', '1']]);
    const again = await dedupd.do(c, CONSUMER, key, fn, { digest: dedupd.digestBytes('a') });
    assert.equal(again.replayed, true);
    assert.equal(again.result.toString(), 'stored');
    assert.equal(fn.calls.length, 1);
  });

  it('stores a Terminal refusal and replays it', async () => {
    const key = uniqueKey();
    const fn = recorder({ throws: new dedupd.Terminal('OUT_OF_STOCK', 'stock 2 < 3', Buffer.from('2')) });
    await assert.rejects(dedupd.do(c, CONSUMER, key, fn), (err) => {
      assert.ok(err instanceof dedupd.Rejected, err);
      assert.equal(err.replayed, false);
      assert.equal(err.rejection.reason, 'OUT_OF_STOCK');
      assert.ok(err.cause instanceof dedupd.Terminal);
      return true;
    });
    await assert.rejects(dedupd.do(c, CONSUMER, key, fn), (err) => {
      assert.equal(err.replayed, true);
      assert.equal(err.rejection.message, 'stock 2 < 3');
      assert.equal(err.rejection.detail.toString(), '2');
      return true;
    });
    assert.equal(fn.calls.length, 1);
  });

  it('releases the key on any other error, so a retry runs fn again', async () => {
    const key = uniqueKey();
    await assert.rejects(dedupd.do(c, CONSUMER, key, recorder({ throws: new RangeError('db down') })), RangeError);
    const released = await c.lookup(CONSUMER, key);
    assert.equal(released.state, 'STATE_RELEASED');
    assert.equal(released.rejection.reason, 'RETRYABLE_ERROR');
    assert.equal(released.rejection.message, 'RangeError: db down');
    assert.equal(released.rejection.retryable, true);
    const fn = recorder();
    const out = await dedupd.do(c, CONSUMER, key, fn);
    assert.equal(out.replayed, false);
    assert.deepEqual(fn.calls, [['2', '2']]);
  });

  it('asks the server to wait for the holder: one claim, answered with its outcome', async () => {
    const key = uniqueKey();
    const holder = await c.claim(CONSUMER, key, { leaseTtl: 60, owner: 'holder' });
    let claims = 0;
    let claimSent;
    const sent = new Promise((resolve) => { claimSent = resolve; });
    const counting = Object.create(c, {
      claim: { value: (...args) => { claims += 1; claimSent(); return c.claim(...args); } },
    });
    const fn = recorder();
    const waiting = dedupd.do(counting, CONSUMER, key, fn, { maxWait: 60 });
    await sent;
    await sleep(300); // a polling do() would claim again meanwhile
    await c.complete(CONSUMER, key, holder.fencingToken, "holder's");
    const out = await waiting;
    assert.equal(out.replayed, true);
    assert.equal(out.result.toString(), "holder's");
    assert.equal(claims, 1);
    assert.deepEqual(fn.calls, []);
  });

  it('gives up with InProgressTimeout after maxWait', async () => {
    const key = uniqueKey();
    await c.claim(CONSUMER, key, { leaseTtl: 60, owner: 'holder' });
    await assert.rejects(dedupd.do(c, CONSUMER, key, recorder(), { maxWait: 0.3 }), (err) => {
      assert.ok(err instanceof dedupd.InProgressTimeout, err);
      assert.equal(err.record.owner, 'holder');
      return true;
    });
  });

  it('carries on with its own claim whose reply was lost', async () => {
    const key = uniqueKey();
    let claims = 0;
    // Applies the first Claim but answers as a retry would: IN_PROGRESS.
    const losesFirstReply = Object.create(c, {
      claim: {
        value: async (...args) => {
          claims += 1;
          if (claims === 1) await c.claim(...args);
          return c.claim(...args);
        },
      },
    });
    const fn = recorder();
    const out = await dedupd.do(losesFirstReply, CONSUMER, key, fn, { owner: 'w', maxWait: 0 });
    assert.equal(out.replayed, false);
    assert.deepEqual(fn.calls, [['1', '1']]);
    assert.match(out.record.owner, /^w#[0-9a-f]{24}$/);
  });

  it('passes DigestMismatch through', async () => {
    const key = uniqueKey();
    await dedupd.do(c, CONSUMER, key, recorder(), { digest: dedupd.digestJSON({ n: 1 }) });
    await assert.rejects(dedupd.do(c, CONSUMER, key, recorder(), { digest: dedupd.digestJSON({ n: 2 }) }), (err) => {
      assert.ok(err instanceof dedupd.DigestMismatch, err);
      assert.equal(err.record.result.toString(), 'done');
      return true;
    });
  });

  it('keeps the lease alive past its TTL while fn runs', async () => {
    const key = uniqueKey();
    const expiry = async () => {
      const t = (await c.lookup(CONSUMER, key)).leaseExpiresAt;
      return Number(t.seconds) * 1e9 + t.nanos;
    };
    const longWork = async () => {
      const first = await expiry();
      // Wait until a heartbeat set the lease a whole TTL past the first
      // expiry: the store's clock is then past that first expiry.
      const deadline = Date.now() + 30000;
      while (await expiry() < first + 1e9) {
        assert.ok(Date.now() < deadline, 'the lease was never extended');
        await sleep(50);
      }
      assert.equal((await c.claim(CONSUMER, key)).outcome, 'OUTCOME_IN_PROGRESS');
      return 'long';
    };
    const out = await dedupd.do(c, CONSUMER, key, longWork, { leaseTtl: 1, heartbeatEvery: 0.2 });
    assert.equal(out.result.toString(), 'long');
    assert.equal(out.record.fencingToken, '1');
  });

  it('aborts the signal and answers LeaseLost when the key was taken over', async () => {
    const key = uniqueKey();
    let signal;
    const overrun = async (token, attempt, s) => {
      signal = s;
      await takeOver(c, CONSUMER, key); // our lease ran out; someone took the key
      // The next heartbeat hears LEASE_LOST and aborts the signal.
      await new Promise((resolve) => (s.aborted ? resolve() : s.addEventListener('abort', resolve)));
      return 'too late';
    };
    await assert.rejects(dedupd.do(c, CONSUMER, key, overrun, { leaseTtl: 0.2, heartbeatEvery: 0.5 }), (err) => {
      assert.ok(err instanceof dedupd.LeaseLost, err);
      assert.equal(err.record.fencingToken, '2');
      assert.equal(err.record.owner, 'taker');
      return true;
    });
    assert.ok(signal.aborted);
    assert.ok(signal.reason instanceof dedupd.LeaseLost);
  });
});

// Against a dedupd that does not wait (as one older than the wait field,
// which ignores it), do() polls with backoff.
describe('do against a server that does not wait', () => {
  let server;
  let c;
  before(async () => {
    server = await startServer(['--max-claim-wait', '0']);
    c = new dedupd.Client(server.addr);
  });
  after(async () => {
    c.close();
    await server.stop();
  });

  it('waits for the holder, then replays its outcome', async () => {
    const key = uniqueKey();
    const holder = await c.claim(CONSUMER, key, { leaseTtl: 60, owner: 'holder' });
    let sawInProgress;
    const seen = new Promise((resolve) => { sawInProgress = resolve; });
    const watching = Object.create(c, {
      claim: {
        value: async (...args) => {
          const resp = await c.claim(...args);
          if (resp.outcome === 'OUTCOME_IN_PROGRESS') sawInProgress();
          return resp;
        },
      },
    });
    const fn = recorder();
    const waiting = dedupd.do(watching, CONSUMER, key, fn, { maxWait: 60 });
    await seen;
    await c.complete(CONSUMER, key, holder.fencingToken, "holder's");
    const out = await waiting;
    assert.equal(out.replayed, true);
    assert.equal(out.result.toString(), "holder's");
    assert.deepEqual(fn.calls, []);
  });
});
