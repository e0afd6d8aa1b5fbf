'use strict';
// The receipts helper against a real PostgreSQL, at READ COMMITTED and at
// SERIALIZABLE. The oracle is a model of effects: every effect writes a row
// of the effects table in the receipt's transaction, so what committed is
// read back directly and compared with hand-computed expectations.

const assert = require('node:assert/strict');

const { Receipts, StaleReceipt, UnknownOutcome, migrate, SCHEMA_VERSION } = require('../src/receipts');
const { forEachBackend, effectOf, stateOf } = require('../testing/receipts');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

forEachBackend('receipts', (env) => {
  const receipts = (options = {}) => new Receipts({ pool: env.pool, isolation: env.isolation, consumer: 'c', ttl: 3600, maxAttempts: 50, ...options });

  env.it('migrates idempotently to version 1, with the Go helper\'s columns', async () => {
    await migrate(env.pool);
    const versions = await env.pool.query('SELECT count(*)::INT AS n, max(version) AS v FROM dedupd_receipts_schema');
    assert.deepEqual(versions.rows[0], { n: 1, v: SCHEMA_VERSION });
    assert.equal(SCHEMA_VERSION, 1);
    const columns = await env.pool.query(`SELECT column_name, data_type, is_nullable FROM information_schema.columns
      WHERE table_name = 'dedupd_receipts' ORDER BY ordinal_position`);
    assert.deepEqual(columns.rows.map((c) => `${c.column_name} ${c.data_type} ${c.is_nullable}`), [
      'consumer text NO', 'key text NO', 'fencing_token bigint NO', 'result bytea NO',
      'recorded_at timestamp with time zone NO', 'expires_at timestamp with time zone NO',
    ]);
    await assert.rejects(migrate(env.pool, { table: 'receipts; DROP TABLE effects' }), TypeError);
  });

  // Holders with distinct tokens race over a few keys. Whatever the
  // interleaving, each key has exactly one effect and one receipt, with the
  // same token and result, exactly one run() per key succeeded, and every
  // other ended in StaleReceipt.
  env.it('keeps one effect and one receipt per key when holders race (model of effects)', async () => {
    const r = receipts();
    const keys = 6;
    const holders = 4;
    const won = new Map();
    const runs = [];
    for (let k = 0; k < keys; k++) {
      for (let h = 0; h < holders; h++) {
        const key = `k${k}`;
        const token = String(k * holders + h + 1);
        runs.push((async () => {
          await sleep(Math.floor(Math.random() * 3));
          try {
            await r.run(key, token, effectOf(`r${token}`));
            won.set(key, [...(won.get(key) || []), token]);
          } catch (err) {
            if (!(err instanceof StaleReceipt)) throw err;
          }
        })());
      }
    }
    await Promise.all(runs);
    for (let k = 0; k < keys; k++) {
      const key = `k${k}`;
      const winners = won.get(key) || [];
      assert.equal(winners.length, 1, `${key}: winners ${winners}`);
      const [token] = winners;
      assert.deepEqual(await stateOf(env.pool, key), {
        effects: [{ token, result: `r${token}` }], receipts: [{ token, result: `r${token}` }],
      }, key);
    }
  });

  // Two holders of one key at once, the newer held open mid-transaction
  // after its effect and a first receipt. Whichever commits its receipt
  // first stands (the newer's receipt of E1 is written after its release;
  // at SERIALIZABLE either may be aborted and retried); the other must end
  // in StaleReceipt with its effect rolled back, and a later holder loses
  // the same way.
  env.it('rolls back the stale holder of a race of two, its effect invisible', async () => {
    const r = receipts();
    let written;
    const wasWritten = new Promise((resolve) => { written = resolve; });
    let release;
    const released = new Promise((resolve) => { release = resolve; });
    const newer = r.run('E1', 2, async (client, info) => {
      const result = await effectOf('new')(client, info);
      await r.write(client, 'E0', 2, result); // the same transaction writes a second receipt first
      written(); // a retried transaction resolves it again: harmless
      await released;
      return result;
    }).then(() => null, (err) => err);
    await wasWritten;
    const stale = r.run('E1', 1, effectOf('old')).then(() => null, (err) => err);
    await sleep(50); // let the stale holder reach its write (or wait on the row lock)
    release();
    const [newerErr, staleErr] = await Promise.all([newer, stale]);
    let want;
    if (newerErr === null && staleErr instanceof StaleReceipt) want = { token: '2', result: 'new' };
    else if (staleErr === null && newerErr instanceof StaleReceipt) want = { token: '1', result: 'old' };
    else assert.fail(`newer holder = ${newerErr}, stale holder = ${staleErr}; want one to commit and the other StaleReceipt`);
    assert.deepEqual(await stateOf(env.pool, 'E1'), { effects: [want], receipts: [want] });
    await assert.rejects(r.run('E1', 3, effectOf('later')), StaleReceipt);
    assert.deepEqual((await stateOf(env.pool, 'E1')).effects, [want]);
  });

  // Receipts written at known times; an expired receipt does not settle
  // and may be replaced; prune deletes exactly the expired ones, in batches.
  env.it('expires and prunes exactly the hand-computed set', async () => {
    const base = Date.UTC(2026, 0, 1);
    let now = base;
    const r = receipts({ now: () => new Date(now) });
    for (let i = 0; i < 5; i++) await r.run(`e${i}`, 1, effectOf('x')); // expire at base + 1h
    now = base + 3600 * 1000 - 1;
    assert.equal((await r.lookup('e0')).result.toString(), 'x'); // live until its expiry...
    now = base + 3600 * 1000;
    assert.equal(await r.lookup('e0'), null); // ...which it does not live to see
    now = base + 90 * 60 * 1000;
    for (let i = 0; i < 3; i++) await r.run(`l${i}`, 1, effectOf('y')); // expire at base + 2h30m
    assert.equal(await r.lookup('e0'), null);
    const live = await r.lookup('l0');
    assert.deepEqual([live.token, live.result.toString()], ['1', 'y']);
    // A new holder replaces the expired e4 (its record is gone too).
    await r.run('e4', 7, effectOf('z'));
    assert.equal(await r.prune(2), 4); // e0..e3, in batches of 2, 2 and 0
    const left = await env.pool.query('SELECT key FROM dedupd_receipts ORDER BY key');
    assert.deepEqual(left.rows.map((row) => row.key), ['e4', 'l0', 'l1', 'l2']);
    assert.equal(await r.prune(2), 0);
    // The receipts of another consumer in the same table are pruned too.
    now = base + 3 * 3600 * 1000;
    assert.equal(await receipts({ consumer: 'other', now: () => new Date(now) }).prune(10), 4);
  });

  env.it('keeps fencing tokens past 2^53 exact', async () => {
    const r = receipts();
    await r.run('big', '9007199254740993', effectOf('b')); // 2^53 + 1: a number would round it
    assert.equal((await r.lookup('big')).token, '9007199254740993');
    await r.run('bigger', 9223372036854775807n, effectOf('m'));
    assert.deepEqual((await stateOf(env.pool, 'bigger')).receipts, [{ token: '9223372036854775807', result: 'm' }]);
  });

  env.it('lets the caller write the receipt in its own transaction, and roll back when stale', async () => {
    const r = receipts();
    await r.run('own', 1, effectOf('first'));
    const client = await env.pool.connect();
    try {
      await client.query('BEGIN');
      await effectOf('second')(client, { key: 'own', token: '2' });
      await assert.rejects(r.write(client, 'own', 2, 'second'), (err) => err instanceof StaleReceipt && err.key === 'own' && err.consumer === 'c');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    assert.deepEqual(await stateOf(env.pool, 'own'), { effects: [{ token: '1', result: 'first' }], receipts: [{ token: '1', result: 'first' }] });
  });

  // A COMMIT that fails is an unknown outcome, never success: here a
  // deferred unique constraint fails at COMMIT.
  env.it('reports a failed COMMIT as UnknownOutcome, and 40003 too', async () => {
    await env.pool.query('ALTER TABLE effects ADD CONSTRAINT one_per_key UNIQUE (key) DEFERRABLE INITIALLY DEFERRED');
    const r = receipts();
    await r.run('dup', 1, effectOf('a'));
    await env.pool.query('DELETE FROM dedupd_receipts');
    const err = await r.run('dup', 2, effectOf('b')).then(() => null, (e) => e);
    assert.ok(err instanceof UnknownOutcome, `got ${err}`);
    assert.equal(err.outcomeUnknown, true);
    assert.equal(err.cause.code, '23505');
    const ambiguous = Object.assign(new Error('result is ambiguous'), { code: '40003' });
    const err40003 = await r.run('amb', 1, () => { throw ambiguous; }).then(() => null, (e) => e);
    assert.ok(err40003 instanceof UnknownOutcome && err40003.cause === ambiguous, `got ${err40003}`);
    assert.deepEqual(await stateOf(env.pool, 'amb'), { effects: [], receipts: [] });
  });

  env.it('does not report a transaction whose statement failed (error caught) as committed', async () => {
    const r = receipts();
    const err = await r.run('caught', 1, async (client, info) => {
      await effectOf('x')(client, info);
      await client.query('SELECT 1/0').catch(() => {});
      return 'x';
    }).then(() => null, (e) => e);
    assert.ok(err instanceof Error && !(err instanceof StaleReceipt), `got ${err}`);
    assert.deepEqual(await stateOf(env.pool, 'caught'), { effects: [], receipts: [] });
  });
});

// Serialization failures, made deterministic: the effect reads a counter,
// another connection updates it and commits, and the effect's own update of
// it fails with 40001 at REPEATABLE READ or SERIALIZABLE (never at READ
// COMMITTED, which sees the new row instead).
forEachBackend('receipts on 40001', (env) => {
  const conflicting = (interfere) => async (client, info) => {
    await client.query('SELECT v FROM counter WHERE id = 1');
    if (interfere()) await env.pool.query('UPDATE counter SET v = v + 100 WHERE id = 1');
    await client.query('UPDATE counter SET v = v + 1 WHERE id = 1');
    return effectOf('done')(client, info);
  };
  const serializable = () => env.isolation === 'serializable' || env.backend.includes('serializable');

  env.it('runs the whole transaction again, once per failure', async () => {
    await env.pool.query('CREATE TABLE counter (id INT PRIMARY KEY, v INT NOT NULL); INSERT INTO counter VALUES (1, 0)');
    const r = new Receipts({ pool: env.pool, isolation: env.isolation, consumer: 'c', ttl: 60 });
    let calls = 0;
    await r.run('K', 1, conflicting(() => ++calls === 1));
    const { v } = (await env.pool.query('SELECT v FROM counter')).rows[0];
    // Retried: the effect ran twice, its first run rolled back. Read committed: once.
    assert.deepEqual([calls, v], serializable() ? [2, 101] : [1, 101]);
    assert.deepEqual(await stateOf(env.pool, 'K'), { effects: [{ token: '1', result: 'done' }], receipts: [{ token: '1', result: 'done' }] });
  });

  // READ COMMITTED raises no serialization failure here: nothing to give up on.
  if (serializable()) env.it('gives up after maxAttempts, nothing committed', async () => {
    await env.pool.query('CREATE TABLE counter (id INT PRIMARY KEY, v INT NOT NULL); INSERT INTO counter VALUES (1, 0)');
    const r = new Receipts({ pool: env.pool, isolation: env.isolation, consumer: 'c', ttl: 60, maxAttempts: 3 });
    let calls = 0;
    await assert.rejects(r.run('K', 1, conflicting(() => ++calls > 0)), (err) => /gave up after 3 serialization failures/.test(err.message) && err.cause.code === '40001');
    assert.equal(calls, 3);
    assert.deepEqual(await stateOf(env.pool, 'K'), { effects: [], receipts: [] });
  });
});
