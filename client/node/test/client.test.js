'use strict';
// Client against a real dedupd: every Claim outcome and every typed error.

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');
const { status: Code } = require('@grpc/grpc-js');

const dedupd = require('../src');
const { withClient, uniqueKey, takeOver } = require('../testing/server');

const CONSUMER = 'node-client';

describe('Client', () => {
  let c;
  withClient((client) => { c = client; });

  it('acquires, reports in progress, then replays the completion', async () => {
    const key = uniqueKey();
    const digest = dedupd.digestBytes('body');
    const first = await c.claim(CONSUMER, key, { digest, leaseTtl: 30, owner: 'w1' });
    assert.equal(first.outcome, 'OUTCOME_ACQUIRED');
    assert.equal(first.fencingToken, '1');
    assert.equal(first.record.state, 'STATE_PENDING');
    assert.equal(first.record.owner, 'w1');

    const busy = await c.claim(CONSUMER, key, { digest });
    assert.equal(busy.outcome, 'OUTCOME_IN_PROGRESS');
    assert.ok(dedupd.seconds(busy.retryAfter) > 0);
    assert.equal(busy.fencingToken, '0');

    const done = await c.complete(CONSUMER, key, first.fencingToken, 'result-1');
    assert.equal(done.state, 'STATE_COMPLETED');
    const again = await c.complete(CONSUMER, key, first.fencingToken, 'result-1');
    assert.equal(again.result.toString(), 'result-1'); // the same Complete is harmless

    const replay = await c.claim(CONSUMER, key, { digest });
    assert.equal(replay.outcome, 'OUTCOME_COMPLETED');
    assert.equal(replay.record.result.toString(), 'result-1');
    assert.equal((await c.lookup(CONSUMER, key)).state, 'STATE_COMPLETED');
  });

  it('replays a terminal rejection', async () => {
    const key = uniqueKey();
    const { fencingToken } = await c.claim(CONSUMER, key);
    const rec = await c.reject(CONSUMER, key, fencingToken, { reason: 'OUT_OF_STOCK', message: '3 > 2', detail: Buffer.from([1]) });
    assert.equal(rec.state, 'STATE_REJECTED');
    const replay = await c.claim(CONSUMER, key);
    assert.equal(replay.outcome, 'OUTCOME_REJECTED');
    assert.deepEqual(replay.record.rejection, { reason: 'OUT_OF_STOCK', message: '3 > 2', detail: Buffer.from([1]), retryable: false });
  });

  it('releases on a retryable reject, and the next claim acquires', async () => {
    const key = uniqueKey();
    const first = await c.claim(CONSUMER, key);
    const rec = await c.reject(CONSUMER, key, first.fencingToken, { reason: 'TIMEOUT', retryable: true });
    assert.equal(rec.state, 'STATE_RELEASED');
    const second = await c.claim(CONSUMER, key);
    assert.equal(second.outcome, 'OUTCOME_ACQUIRED');
    assert.equal(second.fencingToken, '2');
    assert.equal(second.record.attempts, '2');
  });

  it('refuses another digest with DigestMismatch carrying the stored record', async () => {
    const key = uniqueKey();
    const stored = dedupd.digestJSON({ sku: 'A', qty: 3 });
    const { fencingToken } = await c.claim(CONSUMER, key, { digest: stored });
    await c.complete(CONSUMER, key, fencingToken, 'ok');
    const err = await c.claim(CONSUMER, key, { digest: dedupd.digestJSON({ sku: 'A', qty: 4 }) }).then(
      () => assert.fail('claim with another digest succeeded'), (e) => e);
    assert.ok(err instanceof dedupd.DigestMismatch, err);
    assert.ok(err instanceof Error);
    assert.equal(err.code, Code.FAILED_PRECONDITION);
    assert.equal(err.reason, 'DIGEST_MISMATCH');
    assert.equal(err.metadata.consumer, CONSUMER);
    assert.equal(err.metadata.key, key);
    assert.deepEqual(err.record.digest, stored);
    assert.equal(err.record.state, 'STATE_COMPLETED');
    assert.equal(err.record.result.toString(), 'ok');
  });

  it('answers LeaseLost to the holder whose lease was taken over', async () => {
    const key = uniqueKey();
    const first = await c.claim(CONSUMER, key, { leaseTtl: 0.2, owner: 'slow' });
    const second = await takeOver(c, CONSUMER, key);
    assert.equal(second.outcome, 'OUTCOME_ACQUIRED');
    assert.equal(BigInt(second.fencingToken), BigInt(first.fencingToken) + 1n);
    for (const call of [
      () => c.complete(CONSUMER, key, first.fencingToken, 'late'),
      () => c.extendLease(CONSUMER, key, first.fencingToken, { leaseTtl: 10 }),
      () => c.reject(CONSUMER, key, first.fencingToken, { reason: 'X' }),
    ]) {
      await assert.rejects(call, (err) => {
        assert.ok(err instanceof dedupd.LeaseLost, err);
        assert.equal(err.code, Code.ABORTED);
        assert.equal(err.record.fencingToken, second.fencingToken);
        assert.equal(err.record.owner, 'taker');
        return true;
      });
    }
    assert.equal((await c.complete(CONSUMER, key, second.fencingToken, 'x')).state, 'STATE_COMPLETED');
  });

  it('answers AlreadyFinished to another outcome for a finished key', async () => {
    const key = uniqueKey();
    const { fencingToken } = await c.claim(CONSUMER, key);
    await c.complete(CONSUMER, key, fencingToken, 'one');
    for (const call of [() => c.complete(CONSUMER, key, fencingToken, 'two'), () => c.reject(CONSUMER, key, fencingToken, { reason: 'NO' })]) {
      await assert.rejects(call, (err) => {
        assert.ok(err instanceof dedupd.AlreadyFinished, err);
        assert.equal(err.reason, 'ALREADY_FINISHED');
        assert.equal(err.record.result.toString(), 'one');
        return true;
      });
    }
  });

  it('extends a lease', async () => {
    const key = uniqueKey();
    const first = await c.claim(CONSUMER, key, { leaseTtl: 5 });
    const rec = await c.extendLease(CONSUMER, key, first.fencingToken, { leaseTtl: 600 });
    assert.ok(BigInt(rec.leaseExpiresAt.seconds) > BigInt(first.record.leaseExpiresAt.seconds));
  });

  it('answers RecordNotFound to a lookup of an unknown key', async () => {
    await assert.rejects(c.lookup(CONSUMER, uniqueKey()), (err) => {
      assert.ok(err instanceof dedupd.RecordNotFound, err);
      assert.equal(err.code, Code.NOT_FOUND);
      assert.equal(err.record, null);
      return true;
    });
  });

  it('names the invalid field', async () => {
    await assert.rejects(c.claim('Not A Consumer', uniqueKey()), (err) => {
      assert.ok(err instanceof dedupd.InvalidRequest, err);
      assert.equal(err.code, Code.INVALID_ARGUMENT);
      assert.equal(err.reason, 'INVALID_FIELD');
      assert.equal(err.metadata.field, 'consumer');
      return true;
    });
  });

  it('answers Unavailable when nothing listens', async () => {
    const nowhere = new dedupd.Client('127.0.0.1:1', { timeout: 10 });
    try {
      await assert.rejects(nowhere.lookup(CONSUMER, 'k'), (err) => {
        assert.ok(err instanceof dedupd.Unavailable, err);
        assert.equal(err.code, Code.UNAVAILABLE);
        return true;
      });
    } finally {
      nowhere.close();
    }
  });

  it('lists records page by page', async () => {
    const prefix = uniqueKey('list');
    const keys = [0, 1, 2, 3, 4].map((i) => `${prefix}-${i}`);
    for (const k of keys) await c.claim(CONSUMER, k);
    const first = await c.listRecords(CONSUMER, { keyPrefix: prefix, pageSize: 2 });
    assert.equal(first.records.length, 2);
    assert.ok(first.nextPageToken);
    const listed = [];
    for await (const r of c.iterRecords(CONSUMER, { keyPrefix: prefix, pageSize: 2 })) listed.push(r.key);
    assert.deepEqual(listed, keys);
  });
});
