'use strict';
// dedupd's HTTP API from Node's global fetch, with no generated code and no
// client library: Claim, Complete and the replay as JSON over
// `dedupd serve --http-listen` (docs/http.md), and an error's ErrorInfo
// reason read from the Connect error body.

const assert = require('node:assert/strict');
const { before, after, describe, it } = require('node:test');

const { startServer, uniqueKey } = require('../testing/server');

describe('HTTP API through fetch', () => {
  let server;
  let base;

  before(async () => {
    server = await startServer(['--http-listen', '127.0.0.1:0']);
    base = `http://${server.httpAddr}`;
  });
  after(async () => {
    await server.stop();
  });

  /** POSTs body as JSON to a method; returns the status and the parsed body. */
  async function call(method, body) {
    const resp = await fetch(`${base}/dedup.v1.DedupService/${method}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: resp.status, body: await resp.json() };
  }

  it('claims, completes and replays the stored result byte for byte', async () => {
    const key = uniqueKey('fetch');
    const digest = Buffer.from('order 42: 3 items').toString('base64');
    const result = Buffer.from([0x00, 0xff, 0x22, 0x5c]); // no JSON string holds these raw

    const first = await call('Claim', { consumer: 'node-http', key, digest, lease_ttl: '30s' });
    assert.equal(first.status, 200);
    assert.equal(first.body.outcome, 'OUTCOME_ACQUIRED');
    assert.equal(first.body.fencingToken, '1'); // int64 travels as a string

    const done = await call('Complete', {
      consumer: 'node-http', key, fencingToken: first.body.fencingToken, result: result.toString('base64'),
    });
    assert.equal(done.status, 200);
    assert.equal(done.body.record.state, 'STATE_COMPLETED');

    const replay = await call('Claim', { consumer: 'node-http', key, digest });
    assert.equal(replay.status, 200);
    assert.equal(replay.body.outcome, 'OUTCOME_COMPLETED');
    assert.deepEqual(Buffer.from(replay.body.record.result, 'base64'), result);
  });

  it('refuses another digest with HTTP 400 and the reason DIGEST_MISMATCH', async () => {
    const key = uniqueKey('fetch-conflict');
    const first = await call('Claim', { consumer: 'node-http', key, digest: 'q83vEjQ=' });
    assert.equal(first.body.outcome, 'OUTCOME_ACQUIRED');
    const other = await call('Claim', { consumer: 'node-http', key, digest: '3q2+7w==' });
    assert.equal(other.status, 400);
    assert.equal(other.body.code, 'failed_precondition');
    const info = other.body.details.find((d) => d.type === 'google.rpc.ErrorInfo');
    assert.equal(info.debug.reason, 'DIGEST_MISMATCH');
    assert.equal(info.debug.metadata.key, key);
  });

  it('answers a Complete with a stale token LEASE_LOST, HTTP 409, and stores nothing', async () => {
    const key = uniqueKey('fetch-stale');
    await call('Claim', { consumer: 'node-http', key });
    const stale = await call('Complete', { consumer: 'node-http', key, fencingToken: '2', result: 'eA==' });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.details.find((d) => d.type === 'google.rpc.ErrorInfo').debug.reason, 'LEASE_LOST');
    const looked = await call('Lookup', { consumer: 'node-http', key });
    assert.equal(looked.body.record.state, 'STATE_PENDING');
  });
});
