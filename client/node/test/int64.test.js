'use strict';
// int64 fields past 2^53 through a real dedupd. A fencing token grows by one
// per takeover, so the API alone cannot push one that high within a test:
// the test claims keys, stops dedupd, raises their tokens and attempts in
// the embedded SQLite store with the sqlite3 shell, and starts dedupd again
// on the same store. Every value chosen is odd past 2^53, so a JavaScript
// number cannot hold it: a client that rounded through one would send
// another token and get LEASE_LOST, or print another value.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { before, after, describe, it } = require('node:test');

const dedupd = require('../src');
const { startServer, takeOver } = require('../testing/server');

const CONSUMER = 'node-int64';
const TOKEN = 9007199254740993n; // 2^53 + 1; Number(TOKEN) is 2^53
const TAKEN_OVER_FROM = 9007199254740994n; // the next takeover gets 2^53 + 3
// raise() edits SQLite's file; a new directory would otherwise be Pebble's.
const SQLITE = ['--embedded-engine', 'sqlite'];

/** Sets one record's fencing token and attempts in the store under dataDir. */
function raise(dataDir, key, value) {
  const sql = `UPDATE dedup_records SET fencing_token = ${value}, attempts = ${value} WHERE consumer = '${CONSUMER}' AND key = '${key}';
SELECT changes();`;
  const changed = execFileSync('sqlite3', [path.join(dataDir, 'dedup.db'), sql], { encoding: 'utf8' }).trim();
  assert.equal(changed, '1', `no record ${key} to raise`);
}

describe('int64 past 2^53 against a real dedupd', () => {
  let dataDir;
  let server;
  let c;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dedupd-node-int64-'));
    const first = await startServer(SQLITE, { dataDir });
    const setup = new dedupd.Client(first.addr);
    await setup.claim(CONSUMER, 'held', { leaseTtl: 600 });
    await setup.claim(CONSUMER, 'expired', { leaseTtl: 0.05 });
    setup.close();
    await first.stop();
    raise(dataDir, 'held', TOKEN);
    raise(dataDir, 'expired', TAKEN_OVER_FROM);
    server = await startServer(SQLITE, { dataDir });
    c = new dedupd.Client(server.addr);
  });
  after(async () => {
    if (c) c.close();
    if (server) await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('reads tokens and attempts as exact decimal strings', async () => {
    const rec = await c.lookup(CONSUMER, 'held');
    assert.equal(rec.fencingToken, TOKEN.toString());
    assert.equal(rec.attempts, TOKEN.toString());
  });

  it('sends the exact token back: the rounded one is LEASE_LOST', async () => {
    const rounded = BigInt(Number(TOKEN)).toString();
    assert.notEqual(rounded, TOKEN.toString());
    const err = await c.complete(CONSUMER, 'held', rounded, 'x').catch((e) => e);
    assert.ok(err instanceof dedupd.LeaseLost, err);
    assert.equal(err.record.fencingToken, TOKEN.toString()); // decoded from the error details
    const extended = await c.extendLease(CONSUMER, 'held', TOKEN.toString(), { leaseTtl: 600 });
    assert.equal(extended.fencingToken, TOKEN.toString());
    const done = await c.complete(CONSUMER, 'held', TOKEN, 'done'); // a bigint works as well
    assert.equal(done.state, 'STATE_COMPLETED');
    assert.equal(done.fencingToken, TOKEN.toString());
  });

  it('refuses a number that has already lost the token, before any call', async () => {
    await assert.rejects(c.complete(CONSUMER, 'held', Number(TOKEN), 'x'), TypeError);
    await assert.rejects(c.reject(CONSUMER, 'held', '9223372036854775808'), TypeError); // 2^63
  });

  it('takes over past 2^53 and runs do() with the exact token', async () => {
    const next = (TAKEN_OVER_FROM + 1n).toString();
    const claim = await takeOver(c, CONSUMER, 'expired', { leaseTtl: 600 });
    assert.equal(claim.fencingToken, next);
    assert.equal(claim.record.attempts, next);
    await c.reject(CONSUMER, 'expired', claim.fencingToken, { reason: 'AGAIN', retryable: true });
    const seen = [];
    const out = await dedupd.do(c, CONSUMER, 'expired', async (token, attempt) => {
      seen.push([token, attempt]);
      return 'ok';
    });
    const after = (TAKEN_OVER_FROM + 2n).toString();
    assert.deepEqual(seen, [[after, after]]);
    assert.equal(out.record.fencingToken, after);
  });
});
