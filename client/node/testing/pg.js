'use strict';
// A PostgreSQL database of its own for a test file, as the Go tests' pgtest
// gives: created on the server named by DEDUP_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/postgres) and dropped afterwards. When
// the server cannot be reached the tests skip, except under CI (any CI value
// but "", "false" or "0"), where they fail: CI must never pass by skipping
// the database tests.

const crypto = require('node:crypto');
const { before, after } = require('node:test');
const pg = require('pg');

const ENV_URL = 'DEDUP_TEST_POSTGRES_URL';
const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

function inCI() {
  const ci = process.env.CI || '';
  return ci !== '' && ci !== 'false' && ci !== '0';
}

/** The server URL with another database name. */
function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Registers before/after hooks that create and drop a database, once per
 * test file (the first call registers them; later calls share the same
 * database): state.url is the database's URL before the tests run, or
 * state.skip (a reason) when PostgreSQL is unreachable outside CI.
 */
let shared = null;

function testDatabase() {
  if (!shared) shared = createTestDatabase();
  return shared;
}

function createTestDatabase() {
  const server = process.env[ENV_URL] || DEFAULT_URL;
  const name = `dedupd_node_test_${crypto.randomBytes(8).toString('hex')}`;
  const state = { url: null, skip: false };
  const admin = () => new pg.Client({ connectionString: server, connectionTimeoutMillis: 15000 });
  before(async () => {
    const c = admin();
    try {
      await c.connect();
      await c.query(`CREATE DATABASE ${name}`);
      state.url = withDatabase(server, name);
    } catch (err) {
      if (inCI()) throw new Error(`PostgreSQL at ${server} is needed under CI=${process.env.CI}: ${err.message}`, { cause: err });
      state.skip = `SKIPPING: PostgreSQL at ${server} unreachable (${err.message}); set ${ENV_URL}`;
    } finally {
      await c.end().catch(() => {});
    }
  });
  after(async () => {
    if (!state.url) return;
    const c = admin();
    await c.connect();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  });
  return state;
}

module.exports = { testDatabase, ENV_URL };
