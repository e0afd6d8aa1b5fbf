'use strict';
// Per-call options against a real dedupd: a deadline (Date or epoch
// milliseconds) and an AbortSignal on Client methods. The oracle for what
// happened to the gRPC call is a grpc-js interceptor that records each call
// the channel starts, whether its request was sent, and the status it ended
// with; for whether anything reached the server, a later lookup.

const assert = require('node:assert/strict');
const { getEventListeners } = require('node:events');
const { after, before, describe, it } = require('node:test');
const grpc = require('@grpc/grpc-js');

const dedupd = require('../src');
const { startServer, uniqueKey } = require('../testing/server');

const CONSUMER = 'node-call-options';

/** An interceptor and the calls it saw: {method, sent, status}. */
function recorder() {
  const calls = [];
  const interceptor = (options, nextCall) => {
    const entry = { method: options.method_definition.path, sent: false, status: null };
    calls.push(entry);
    return new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        next(metadata, { onReceiveStatus(status, nextStatus) { entry.status = status.code; nextStatus(status); } });
      },
      sendMessage(message, next) {
        entry.sent = true;
        next(message);
      },
    });
  };
  return { calls, interceptor };
}

/** Whether err is the client's AbortError, carrying the signal's reason. */
function isAbort(err, reason) {
  return err instanceof dedupd.AbortError && err instanceof dedupd.DedupError && err.name === 'AbortError'
    && err.code === grpc.status.CANCELLED && err.cause === reason;
}

describe('per-call options', () => {
  let server;
  let c;
  let seen;
  before(async () => {
    server = await startServer();
    seen = recorder();
    c = new dedupd.Client(server.addr, { channelOptions: { interceptors: [seen.interceptor] } });
    await c.lookup(CONSUMER, uniqueKey()).catch(() => null); // connect once
  });
  after(async () => {
    if (c) c.close();
    if (server) await server.stop();
  });

  it('fails with DEADLINE_EXCEEDED past a deadline, as a Date or as epoch milliseconds', async () => {
    for (const deadline of [new Date(Date.now() - 1000), Date.now() - 1000]) {
      const key = uniqueKey();
      await assert.rejects(c.claim(CONSUMER, key, { leaseTtl: 30, deadline }),
        (err) => err instanceof dedupd.DedupError && err.code === grpc.status.DEADLINE_EXCEEDED);
      await assert.rejects(c.complete(CONSUMER, key, '1', 'r', { deadline }),
        (err) => err.code === grpc.status.DEADLINE_EXCEEDED);
      await assert.rejects(c.lookupBatch(CONSUMER, [key], { deadline }),
        (err) => err.code === grpc.status.DEADLINE_EXCEEDED);
      await assert.rejects(c.listRecords(CONSUMER, { pageSize: 1, deadline }),
        (err) => err.code === grpc.status.DEADLINE_EXCEEDED);
      await assert.rejects(c.getStream(CONSUMER, key, { deadline }),
        (err) => err.code === grpc.status.DEADLINE_EXCEEDED);
    }
  });

  it('replaces the client timeout with the call\'s deadline', async () => {
    const expired = new dedupd.Client(server.addr, { timeout: 0 }); // every call's deadline is now
    try {
      const key = uniqueKey();
      await assert.rejects(expired.claim(CONSUMER, key), (err) => err.code === grpc.status.DEADLINE_EXCEEDED);
      const claimed = await expired.claim(CONSUMER, key, { deadline: new Date(Date.now() + 60_000) });
      assert.equal(claimed.outcome, 'OUTCOME_ACQUIRED');
      assert.equal((await c.lookup(CONSUMER, key)).state, 'STATE_PENDING');
    } finally {
      expired.close();
    }
  });

  it('refuses a deadline that is neither a Date nor a number', async () => {
    for (const deadline of ['5s', new Date('nope'), Number.NaN, {}]) {
      await assert.rejects(c.lookup(CONSUMER, uniqueKey(), { deadline }), TypeError);
    }
    await assert.rejects(c.lookup(CONSUMER, uniqueKey(), { signal: {} }), TypeError);
  });

  it('cancels a call in flight when its signal is aborted, and rejects with AbortError', async () => {
    const key = uniqueKey();
    const ctrl = new AbortController();
    const before = seen.calls.length;
    const pending = c.claim(CONSUMER, key, { leaseTtl: 30, signal: ctrl.signal });
    const [call] = seen.calls.slice(before);
    assert.ok(call && call.method === '/dedup.v1.DedupService/Claim' && call.sent, 'the request is sent before the abort');
    const reason = new Error('caller gave up');
    ctrl.abort(reason);
    await assert.rejects(pending, (err) => isAbort(err, reason));
    assert.equal(call.status, grpc.status.CANCELLED, 'the gRPC call itself was cancelled');
    assert.equal(getEventListeners(ctrl.signal, 'abort').length, 0, 'the abort listener is removed');
  });

  it('fails before sending anything when the signal is already aborted', async () => {
    const key = uniqueKey();
    const ctrl = new AbortController();
    const reason = new Error('already gone');
    ctrl.abort(reason);
    const before = seen.calls.length;
    await assert.rejects(c.claim(CONSUMER, key, { leaseTtl: 30, signal: ctrl.signal }), (err) => isAbort(err, reason));
    await assert.rejects(c.claimStream(CONSUMER, key, 1, { signal: ctrl.signal }), (err) => isAbort(err, reason));
    await assert.rejects(c.claimBatch(CONSUMER, [key], { signal: ctrl.signal }), (err) => isAbort(err, reason));
    assert.equal(seen.calls.length, before, 'no call was started');
    await assert.rejects(c.lookup(CONSUMER, key), dedupd.RecordNotFound); // nothing reached the server
  });

  it('leaves a signal that is never aborted without listeners once the call is done', async () => {
    const ctrl = new AbortController();
    const key = uniqueKey();
    const claimed = await c.claim(CONSUMER, key, { leaseTtl: 30, signal: ctrl.signal });
    const done = await c.complete(CONSUMER, key, claimed.fencingToken, 'ok', { signal: ctrl.signal, deadline: Date.now() + 60_000 });
    assert.equal(done.state, 'STATE_COMPLETED');
    await assert.rejects(c.lookup(CONSUMER, `${key}-absent`, { signal: ctrl.signal }), dedupd.RecordNotFound);
    assert.equal(getEventListeners(ctrl.signal, 'abort').length, 0);
    ctrl.abort(); // after the calls: changes nothing
    assert.equal((await c.lookup(CONSUMER, key)).state, 'STATE_COMPLETED');
  });
});
