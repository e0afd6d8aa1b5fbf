'use strict';
// Helpers of the receipts tests: the PostgreSQL backends they run on, a
// model of effects (every effect that committed is a row of the effects
// table, written in the receipt's transaction), and a key's state read
// directly from the tables.

const { describe, beforeEach, after, it } = require('node:test');
const pg = require('pg');

const { migrate } = require('../src/receipts');
const { testDatabase } = require('./pg');

// Each backend is a pool on the test database and the isolation Receipts
// begins with: PostgreSQL's default READ COMMITTED, SERIALIZABLE asked per
// transaction, and SERIALIZABLE as the session default with no level asked
// (what CockroachDB always runs at).
const BACKENDS = [
  { name: 'read committed', isolation: undefined, options: undefined },
  { name: 'serializable', isolation: 'serializable', options: undefined },
  { name: 'session default serializable', isolation: undefined, options: '-c default_transaction_isolation=serializable' },
];

/**
 * Runs suite(env) in one describe per backend, on a database of the file's
 * own. env.pool is the backend's pool (opened before the suite's tests) and
 * env.isolation its level; before each test the receipt table is migrated
 * afresh and the effects table emptied. env.it is node:test's it, skipping
 * when PostgreSQL is unreachable outside CI. backends narrows the list.
 */
function forEachBackend(title, suite, backends = BACKENDS) {
  const db = testDatabase();
  for (const b of backends) {
    describe(`${title} (${b.name})`, () => {
      const env = { pool: null, isolation: b.isolation, backend: b.name, db };
      env.it = (name, fn) => it(name, async (t) => {
        if (db.skip) return t.skip(db.skip);
        return fn(t);
      });
      beforeEach(async () => {
        if (db.skip) return;
        if (!env.pool) {
          env.pool = new pg.Pool({ connectionString: db.url, options: b.options, max: 12 });
          await env.pool.query('DROP TABLE IF EXISTS dedupd_receipts, dedupd_receipts_schema');
          await migrate(env.pool);
        }
        // One statement (one commit) rather than a migration per test: the
        // suites run on a busy machine.
        await env.pool.query(`DROP TABLE IF EXISTS effects, counter;
          CREATE TABLE effects (key TEXT NOT NULL, token BIGINT NOT NULL, result BYTEA NOT NULL);
          TRUNCATE dedupd_receipts`);
      });
      after(async () => {
        if (env.pool) await env.pool.end();
      });
      suite(env);
    });
  }
}

/** An effect that records itself in the effects table, in the receipt's transaction, and returns result. */
function effectOf(result) {
  return async (client, { key, token }) => {
    await client.query('INSERT INTO effects (key, token, result) VALUES ($1, $2, $3)', [key, token, Buffer.from(result)]);
    return result;
  };
}

/** A key's state read directly: its effects and its receipts (tokens as strings, results as text). */
async function stateOf(pool, key) {
  const effects = (await pool.query('SELECT token::TEXT AS token, result FROM effects WHERE key = $1', [key])).rows;
  const receipts = (await pool.query('SELECT fencing_token::TEXT AS token, result FROM dedupd_receipts WHERE key = $1', [key])).rows;
  const text = (rows) => rows.map((r) => ({ token: r.token, result: r.result.toString() }));
  return { effects: text(effects), receipts: text(receipts) };
}

module.exports = { forEachBackend, effectOf, stateOf, BACKENDS };
