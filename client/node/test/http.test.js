'use strict';
// @dedupd/client/http against a real dedupd, in front of a counting
// handler on node:http: the handler must see each key's request once.

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { describe, it, before, after } = require('node:test');

const { Client } = require('../src');
const { idempotency, parseKey } = require('../src/http');
const { startServer } = require('../testing/server');

let server;
let client;
let consumers = 0;

before(async () => {
  server = await startServer(['--max-result-bytes', String(2 << 20)]);
  client = new Client(server.addr);
});
after(async () => {
  client.close();
  await server.stop();
});

/** The API behind: counts calls, answers by path (see the Go suite's upstream). */
function upstream() {
  const u = { calls: 0, seen: [], release: null, entered: [] };
  const released = new Promise((resolve) => { u.release = resolve; });
  u.handler = async (req, res) => {
    u.calls += 1;
    const n = u.calls;
    u.seen.push({ key: req.headers['idempotency-key'], token: req.headers['dedupd-fencing-token'], body: req.rawBody && req.rawBody.toString() });
    res.setHeader('X-Upstream', 'orders');
    res.setHeader('Connection', 'X-Hop');
    res.setHeader('X-Hop', '1');
    const path = req.url.split('?')[0];
    if (path.startsWith('/status/')) {
      res.statusCode = Number(path.slice(8));
      res.end(`status ${res.statusCode}, call ${n}`);
    } else if (path === '/slow') {
      u.entered.forEach((f) => f());
      await released;
      res.writeHead(201);
      res.end(`slow call ${n}`);
    } else if (path.startsWith('/big/')) {
      let size = Number(path.slice(5));
      while (size > 0) { const k = Math.min(size, 65536); res.write(Buffer.alloc(k, String(n % 10))); size -= k; }
      res.end();
    } else {
      res.writeHead(201, { 'Content-Type': 'application/json', 'X-Order-Id': String(n) });
      res.end(JSON.stringify({ order: n, request: String(req.rawBody || '') }));
    }
  };
  u.whenEntered = () => new Promise((resolve) => u.entered.push(resolve));
  return u;
}

/** A node:http server with the middleware (opts over a fresh consumer) in front of a fresh upstream. */
async function front(opts = {}, chain = null) {
  const u = upstream();
  consumers += 1;
  const mw = idempotency({ client, consumer: `node-http-${consumers}`, ...opts });
  const srv = http.createServer(chain ? chain(mw, u.handler) : mw.wrap(u.handler));
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${srv.address().port}`;
  const call = async (path, { key, body = '{}', method = 'POST', headers = {} } = {}) => {
    const h = { 'Content-Type': 'application/json', ...headers };
    if (key !== undefined) h['Idempotency-Key'] = key;
    const r = await fetch(base + path, { method, headers: h, body: method === 'GET' ? undefined : body });
    return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
  };
  return { u, base, call, close: () => { u.release(); srv.closeAllConnections(); srv.close(); } };
}

function assertProblem(r, status, kind) {
  assert.equal(r.status, status, r.body.toString());
  assert.equal(r.headers.get('content-type'), 'application/problem+json');
  const p = JSON.parse(r.body);
  assert.ok(p.type.endsWith(`#${kind}`), p.type);
  assert.equal(p.status, status);
  return p;
}

function assertReplay(first, again) {
  assert.equal(again.status, first.status);
  assert.deepEqual(again.body, first.body);
  assert.equal(first.headers.get('idempotent-replayed'), null);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  for (const h of ['content-type', 'x-upstream', 'x-order-id', 'dedupd-idempotency-expires']) {
    assert.equal(again.headers.get(h), first.headers.get(h), h);
  }
}

describe('http middleware', () => {
  it('runs a keyed POST once and replays it byte for byte, without hop-by-hop headers', async () => {
    const f = await front();
    try {
      const first = await f.call('/orders?x=1', { key: '"k1"', body: '{"sku":"a"}' });
      assert.equal(first.status, 201);
      assert.ok(new Date(first.headers.get('dedupd-idempotency-expires')) > new Date());
      assert.equal(first.headers.get('x-hop'), null);
      assertReplay(first, await f.call('/orders?x=1', { key: 'k1', body: '{"sku":"a"}' }));
      assert.equal(f.u.calls, 1);
      assert.equal(f.u.seen[0].key, '"k1"');
      assert.match(f.u.seen[0].token, /^\d+$/);
    } finally { f.close(); }
  });

  it('needs a key on POST and PATCH only, by rule', async () => {
    const f = await front({ rules: ['POST /webhooks=optional', 'PUT /orders=required', '* /health=off'] });
    try {
      assertProblem(await f.call('/orders'), 400, 'key-missing');
      assertProblem(await f.call('/orders', { method: 'PATCH' }), 400, 'key-missing');
      assertProblem(await f.call('/orders/1', { method: 'PUT' }), 400, 'key-missing');
      assert.equal(f.u.calls, 0);
      assert.equal((await f.call('/orders', { method: 'GET' })).status, 201);
      assert.equal((await f.call('/webhooks/a')).status, 201);
      assert.equal((await f.call('/health', { key: 'same' })).status, 201);
      assert.equal((await f.call('/health', { key: 'same' })).headers.get('idempotent-replayed'), null);
      assert.equal(f.u.calls, 4);
    } finally { f.close(); }
  });

  it('refuses an invalid key with 400 and scopes keys per client', async () => {
    const f = await front();
    try {
      for (const bad of ['"open', 'two words', 'x'.repeat(256), '"a" b']) assertProblem(await f.call('/orders', { key: bad }), 400, 'key-invalid');
      const a = await f.call('/orders', { key: 'shared', headers: { Authorization: 'Bearer a' }, body: '{"a":1}' });
      const b = await f.call('/orders', { key: 'shared', headers: { Authorization: 'Bearer b' }, body: '{"b":1}' });
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      assert.notDeepEqual(a.body, b.body);
      assert.equal(f.u.calls, 2);
    } finally { f.close(); }
  });

  it('answers 422 to a key reused with another request, however it differs', async () => {
    const f = await front({ fingerprintHeaders: ['X-Currency'] });
    try {
      await f.call('/orders?q=1', { key: 'fp', headers: { 'X-Currency': 'EUR' } });
      for (const change of [{ path: '/orders?q=2' }, { body: '{"x":1}' }, { headers: { 'X-Currency': 'USD' } },
        { headers: { 'X-Currency': 'EUR', 'Content-Type': 'text/plain' } }, { method: 'PATCH' }]) {
        assertProblem(await f.call(change.path || '/orders?q=1', { key: 'fp', headers: { 'X-Currency': 'EUR' }, ...change }), 422, 'key-reused');
      }
      assert.equal(f.u.calls, 1);
    } finally { f.close(); }
  });

  it('answers 409 with Retry-After while the first runs, and racing retries see one call', async () => {
    const f = await front({ wait: 0 });
    try {
      const entered = f.u.whenEntered();
      const first = f.call('/slow', { key: 'busy' });
      await entered;
      const busy = await f.call('/slow', { key: 'busy' });
      assertProblem(busy, 409, 'request-in-flight');
      assert.ok(Number(busy.headers.get('retry-after')) >= 1);
      f.u.release();
      assertReplay(await first, await f.call('/slow', { key: 'busy' }));
      assert.equal(f.u.calls, 1);
    } finally { f.close(); }
    const g = await front({ wait: 60 });
    try {
      const replies = await Promise.all(Array.from({ length: 8 }, () => g.call('/orders', { key: 'race' })));
      assert.equal(replies.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length, 1);
      for (const r of replies) assert.deepEqual(r.body, replies[0].body);
      assert.equal(g.u.calls, 1);
    } finally { g.close(); }
  });

  it('releases the key after a 5xx by default; stores or keeps it when configured', async () => {
    const f = await front();
    try {
      assert.equal((await f.call('/status/503', { key: 'r' })).status, 503);
      const again = await f.call('/status/503', { key: 'r' });
      assert.match(again.body.toString(), /call 2/);
      assert.notEqual(f.u.seen[0].token, f.u.seen[1].token);
      await f.call('/status/429', { key: 't' });
      await f.call('/status/429', { key: 't' });
      assert.equal(f.u.calls, 4);
    } finally { f.close(); }
    const s = await front({ on5xx: 'store' });
    try {
      assertReplay(await s.call('/status/500', { key: 's' }), await s.call('/status/500', { key: 's' }));
    } finally { s.close(); }
    const k = await front({ on5xx: 'keep', wait: 0 });
    try {
      await k.call('/status/502', { key: 'k' });
      assertProblem(await k.call('/status/502', { key: 'k' }), 409, 'request-in-flight');
      assert.equal(k.u.calls, 1);
    } finally { k.close(); }
  });

  it('passes a response over the stored limit through and marks its key; refuses a large body with 413', async () => {
    const f = await front({ maxStoredResponseBytes: 65536, maxRequestBytes: 1000 });
    try {
      const big = await f.call('/big/300000', { key: 'big' });
      assert.equal(big.body.length, 300000);
      const p = assertProblem(await f.call('/big/300000', { key: 'big' }), 409, 'response-not-stored');
      assert.match(p.detail, /larger than/);
      assertProblem(await f.call('/orders', { key: 'b413', body: 'x'.repeat(1001) }), 413, 'request-too-large');
      assert.equal(f.u.calls, 1);
    } finally { f.close(); }
  });

  it('lets a client drop the connection after sending: its retry gets the first run', async () => {
    const f = await front({ wait: 60 });
    try {
      const entered = f.u.whenEntered();
      const sock = net.connect(Number(new URL(f.base).port), '127.0.0.1');
      await new Promise((resolve) => sock.once('connect', resolve));
      sock.write('POST /slow HTTP/1.1\r\nHost: x\r\nIdempotency-Key: drop\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
      await entered;
      sock.destroy();
      const retry = f.call('/slow', { key: 'drop' });
      f.u.release();
      const r = await retry;
      assert.equal(r.status, 201);
      assert.equal(r.body.toString(), 'slow call 1');
      assert.equal(r.headers.get('idempotent-replayed'), 'true');
      assert.equal(f.u.calls, 1);
    } finally { f.close(); }
  });

  it('works in an Express-style chain behind a body parser that keeps req.rawBody', async () => {
    const parser = (req, res, next) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => { req.rawBody = Buffer.concat(chunks); req.body = JSON.parse(req.rawBody || '{}'); next(); });
    };
    const chain = (mw, handler) => (req, res) => parser(req, res, () => mw(req, res, () => {
      assert.equal(typeof req.body, 'object'); // the parser's, not overwritten
      handler(req, res);
    }));
    const f = await front({}, chain);
    try {
      const first = await f.call('/orders', { key: 'ex', body: '{"sku":"e"}' });
      assertReplay(first, await f.call('/orders', { key: 'ex', body: '{"sku":"e"}' }));
      assertProblem(await f.call('/orders', { key: 'ex', body: '{"sku":"f"}' }), 422, 'key-reused');
      assert.equal(f.u.calls, 1);
    } finally { f.close(); }
  });

  it('marks a response above the consumer\'s max_result_bytes, and fails closed without dedupd', async () => {
    const small = await startServer(); // the default 64 KiB max_result_bytes
    const smallClient = new Client(small.addr);
    const f = await front({ client: smallClient });
    try {
      const first = await f.call('/big/100000', { key: 'policy' });
      assert.equal(first.body.length, 100000);
      assertProblem(await f.call('/big/100000', { key: 'policy' }), 409, 'response-not-stored');
      assert.equal(f.u.calls, 1);
    } finally { f.close(); smallClient.close(); }
    await small.stop();
    const downClient = new Client(small.addr, { timeout: 2 });
    const g = await front({ client: downClient });
    try {
      const r = await g.call('/orders', { key: 'down' });
      assertProblem(r, 503, 'dedupd-unavailable');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      assert.equal(g.u.calls, 0);
    } finally { g.close(); downClient.close(); }
  });

  it('has an ES module face with the same names', async () => {
    const esm = await import('../src/http.mjs');
    const cjs = require('../src/http');
    assert.deepEqual(Object.keys(esm).filter((n) => n !== 'default').sort(), Object.keys(cjs).sort());
    assert.equal(esm.idempotency, cjs.idempotency);
  });

  it('parses keys as the Go middleware does', () => {
    assert.equal(parseKey('"a\\"b"'), 'a"b');
    assert.equal(parseKey('"a";p=1'), 'a');
    assert.equal(parseKey(' tok '), 'tok');
    assert.throws(() => parseKey(['a', 'b']), /2 times/);
    assert.throws(() => parseKey('""'), /empty/);
    assert.throws(() => parseKey('"é"'), /printable ASCII/);
  });
});
