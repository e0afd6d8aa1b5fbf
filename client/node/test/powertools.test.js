'use strict';
// DedupdPersistenceLayer under the real Powertools idempotency utility
// (@aws-lambda-powertools/idempotency from npm: makeIdempotent and
// IdempotencyConfig) against a real dedupd. The oracles are the handler's
// effects, counted, and the records dedupd stores, whose keys and digests
// are computed here from Powertools' documented scheme (prefix#hash, md5
// base64 of the JSON of the JMESPath selection).

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { describe, it } = require('node:test');

const {
  makeIdempotent, IdempotencyConfig, IdempotencyAlreadyInProgressError, IdempotencyValidationError,
  IdempotencyPersistenceLayerError,
} = require('@aws-lambda-powertools/idempotency');
const { BasePersistenceLayer } = require('@aws-lambda-powertools/idempotency/persistence');
const { DedupdPersistenceLayer } = require('../src/powertools');
const { Client } = require('../src');
const { withClient, uniqueKey, sleep } = require('../testing/server');

const CONSUMER = 'node-powertools';

/** A Lambda context as Powertools reads it: only the remaining time matters. */
const lambdaContext = (remainingMs = 60_000) => ({ getRemainingTimeInMillis: () => remainingMs, functionName: 'charge', awsRequestId: crypto.randomUUID() });

/** The dedupd key Powertools' record of event id gets. */
function keyOf(prefix, id) {
  return `${prefix}#${crypto.createHash('md5').update(JSON.stringify(id)).digest('base64')}`;
}

/**
 * A charging handler made idempotent on event.id, validating event.amount,
 * with its effects counted. gate, when set, is awaited before the effect
 * returns (to hold the claim); fail makes it throw.
 */
function chargeHandler(client, { leaseTtl, gate = null, fail = () => false, prefix = uniqueKey('pt') } = {}) {
  const effects = [];
  const persistenceStore = new DedupdPersistenceLayer({ client, consumer: CONSUMER, ...(leaseTtl ? { leaseTtl } : {}) });
  const charge = async (event) => {
    effects.push(event.id);
    if (gate) await gate(event);
    if (fail(event)) throw new Error(`gateway down for ${event.id}`);
    return { charged: event.amount, id: event.id, run: effects.length };
  };
  const handler = makeIdempotent(charge, {
    persistenceStore,
    keyPrefix: prefix,
    config: new IdempotencyConfig({ eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' }),
  });
  return { handler, effects, prefix, persistenceStore };
}

/** A gate the test opens: wait() resolves once open() was called. */
function gate() {
  let open;
  const opened = new Promise((resolve) => { open = resolve; });
  return { wait: () => opened, open };
}

describe('DedupdPersistenceLayer with makeIdempotent', () => {
  let c;
  withClient((client) => { c = client; });

  it('is a Powertools BasePersistenceLayer', () => {
    assert.ok(new DedupdPersistenceLayer({ client: c, consumer: CONSUMER }) instanceof BasePersistenceLayer);
    assert.throws(() => new DedupdPersistenceLayer({ consumer: CONSUMER }), TypeError);
    assert.throws(() => new DedupdPersistenceLayer({ client: c }), TypeError);
    assert.throws(() => new DedupdPersistenceLayer({ client: c, consumer: CONSUMER, leaseTtl: 0 }), TypeError);
  });

  it('runs a repeated event once and replays its response', async () => {
    const { handler, effects, prefix } = chargeHandler(c);
    const event = { id: uniqueKey('ev'), amount: 42 };
    const first = await handler({ ...event }, lambdaContext());
    const again = await handler({ ...event }, lambdaContext());
    assert.deepEqual(first, { charged: 42, id: event.id, run: 1 });
    assert.deepEqual(again, first);
    assert.deepEqual(effects, [event.id]);
    const stored = await c.lookup(CONSUMER, keyOf(prefix, event.id));
    assert.equal(stored.state, 'STATE_COMPLETED');
    assert.deepEqual(JSON.parse(stored.result.toString()), first);
    // Powertools' payload hash is the digest: the md5 of the JSON of amount.
    assert.deepEqual(stored.digest, crypto.createHash('md5').update('42').digest());
  });

  it('refuses the same event id with another payload (payload validation)', async () => {
    const { handler, effects, prefix } = chargeHandler(c);
    const id = uniqueKey('ev');
    await handler({ id, amount: 42 }, lambdaContext());
    await assert.rejects(handler({ id, amount: 43 }, lambdaContext()), IdempotencyValidationError);
    assert.deepEqual(effects, [id]);
    const stored = await c.lookup(CONSUMER, keyOf(prefix, id));
    assert.equal(JSON.parse(stored.result.toString()).charged, 42);
  });

  it('refuses another payload while the first is still in progress too', async () => {
    const g = gate();
    const { handler, effects } = chargeHandler(c, { gate: g.wait });
    const id = uniqueKey('ev');
    const first = handler({ id, amount: 1 }, lambdaContext());
    while (effects.length === 0) await sleep(5);
    await assert.rejects(handler({ id, amount: 2 }, lambdaContext()), IdempotencyValidationError);
    g.open();
    assert.equal((await first).charged, 1);
    assert.equal(effects.length, 1);
  });

  it('runs concurrent invocations of one event once, across two layers (two Lambda environments)', async () => {
    const g = gate();
    const second = new Client(c.stub.getChannel().getTarget());
    try {
      const a = chargeHandler(c, { gate: g.wait });
      const b = chargeHandler(second, { gate: g.wait, prefix: a.prefix }); // the same function
      const event = { id: uniqueKey('ev'), amount: 7 };
      const calls = [];
      for (let i = 0; i < 5; i++) {
        calls.push(settled(a.handler({ ...event }, lambdaContext())), settled(b.handler({ ...event }, lambdaContext())));
      }
      while (a.effects.length + b.effects.length === 0) await sleep(5);
      await sleep(100); // let every call reach dedupd while the claim is held
      g.open();
      const results = await Promise.all(calls);
      assert.equal(a.effects.length + b.effects.length, 1, 'the handler ran more than once');
      const ran = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r) => r.status === 'rejected');
      for (const r of refused) assert.ok(r.reason instanceof IdempotencyAlreadyInProgressError, r.reason);
      assert.equal(ran.length + refused.length, 10);
      // Once it finished, every later invocation replays it.
      const replay = await b.handler({ ...event }, lambdaContext());
      assert.equal(replay.charged, 7);
      assert.equal(a.effects.length + b.effects.length, 1);
    } finally {
      second.close();
    }
  });

  it('takes an expired in-progress record over, and fences the late holder out', async () => {
    const heldA = gate();
    const heldB = gate();
    const { handler, effects, prefix } = chargeHandler(c, { gate: (event) => (event.who === 'A' ? heldA.wait() : heldB.wait()) });
    const id = uniqueKey('ev');
    const key = keyOf(prefix, id);
    // A: the Lambda has 300 ms left, so the lease lasts 300 ms; its handler
    // outlives it (a timed-out Lambda, or one frozen mid-call).
    const a = settled(handler({ id, amount: 5, who: 'A' }, lambdaContext(300)));
    while (effects.length === 0) await sleep(5);
    await assert.rejects(handler({ id, amount: 5, who: 'early' }, lambdaContext()), IdempotencyAlreadyInProgressError);
    await waitLeaseExpired(c, key);
    // B, in the same process, takes over: the handler runs again, under the
    // next fencing token, and is held while A wakes up.
    const b = settled(handler({ id, amount: 5, who: 'B' }, lambdaContext()));
    while (effects.length < 2) await sleep(5);
    const taken = await c.lookup(CONSUMER, key);
    assert.deepEqual([taken.state, taken.fencingToken, taken.attempts], ['STATE_PENDING', '2', '2']);
    // A's Complete carries A's token (1), not B's: LEASE_LOST, nothing stored.
    heldA.open();
    const lateA = await a;
    assert.equal(lateA.status, 'rejected');
    assert.ok(lateA.reason instanceof IdempotencyPersistenceLayerError, lateA.reason);
    assert.equal(lateA.reason.cause.reason, 'LEASE_LOST');
    assert.equal((await c.lookup(CONSUMER, key)).state, 'STATE_PENDING');
    heldB.open();
    const byB = await b;
    assert.equal(byB.status, 'fulfilled', byB.reason);
    assert.equal(byB.value.run, 2);
    const stored = await c.lookup(CONSUMER, key);
    assert.deepEqual([stored.state, stored.fencingToken], ['STATE_COMPLETED', '2']);
    assert.deepEqual(JSON.parse(stored.result.toString()), byB.value);
    assert.deepEqual(effects, [id, id]);
  });

  it('releases the key when the handler throws, so the next invocation runs it', async () => {
    let failures = 1;
    const { handler, effects, prefix } = chargeHandler(c, { fail: () => failures-- > 0 });
    const event = { id: uniqueKey('ev'), amount: 9 };
    await assert.rejects(handler({ ...event }, lambdaContext()), /gateway down/);
    const released = await c.lookup(CONSUMER, keyOf(prefix, event.id));
    assert.equal(released.state, 'STATE_RELEASED');
    assert.equal(released.rejection.reason, 'RETRYABLE_ERROR');
    assert.equal(released.rejection.retryable, true);
    const out = await handler({ ...event }, lambdaContext());
    assert.equal(out.charged, 9);
    assert.equal(effects.length, 2);
    assert.equal((await c.lookup(CONSUMER, keyOf(prefix, event.id))).attempts, '2');
  });

  it('keeps a configured lease alive past its length while the handler runs', async () => {
    let prefix;
    const { handler, effects, prefix: p } = chargeHandler(c, {
      leaseTtl: 0.6,
      gate: async (event) => {
        const key = keyOf(prefix, event.id);
        const first = ms((await c.lookup(CONSUMER, key)).leaseExpiresAt);
        // Until a heartbeat set the lease a second past its first expiry,
        // the store's clock is then past that first expiry.
        for (let i = 0; ms((await c.lookup(CONSUMER, key)).leaseExpiresAt) < first + 1000; i++) {
          assert.ok(i < 400, 'the lease was never extended');
          await sleep(25);
        }
        const busy = await c.claim(CONSUMER, key, { digest: crypto.createHash('md5').update('3').digest() });
        assert.equal(busy.outcome, 'OUTCOME_IN_PROGRESS');
      },
    });
    prefix = p;
    const id = uniqueKey('ev');
    // The Lambda's 100 ms left do not matter: leaseTtl was configured.
    const out = await handler({ id, amount: 3 }, lambdaContext(100));
    assert.equal(out.charged, 3);
    assert.equal(effects.length, 1);
    assert.equal((await c.lookup(CONSUMER, keyOf(prefix, id))).fencingToken, '1');
  });
});

/** p's outcome as Promise.allSettled gives it, handled at once. */
function settled(p) {
  return p.then((value) => ({ status: 'fulfilled', value }), (reason) => ({ status: 'rejected', reason }));
}

function ms(ts) {
  return Number(ts.seconds) * 1000 + ts.nanos / 1e6;
}

/** Waits until dedupd lists key's claim as expired (its lease ran out on the store's clock). */
async function waitLeaseExpired(client, key) {
  for (let i = 0; i < 400; i++) {
    const page = await client.listRecords(CONSUMER, { leaseExpired: true, keyPrefix: key });
    if (page.records.some((r) => r.key === key)) return;
    await sleep(25);
  }
  throw new Error(`the lease on ${key} never ran out`);
}
