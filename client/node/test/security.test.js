'use strict';
// Client against a real dedupd with --auth-tokens, TLS and mutual TLS:
// tokens from the option or DEDUPD_TOKEN, the typed refusals, and the TLS
// options. The certificates are made afresh for the run (makePKI).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { before, after, describe, it } = require('node:test');

const dedupd = require('../src');
const { isLoopback } = require('../src/client');
const { startServer, makePKI, authFile, uniqueKey } = require('../testing/server');

const SHOP_TOKEN = 'tok-node-shop-48d2a0c9';
const ADMIN_TOKEN = 'tok-node-admin-e17b5f36';
const TOKENS = [{ token: SHOP_TOKEN, consumers: ['shop'] }, { token: ADMIN_TOKEN, admin: true }];

describe('tokens and TLS against a real dedupd', () => {
  let dir;
  let pki;
  let ca;
  let plain;
  let tls;
  let mtls;
  const clients = [];
  // client makes a Client closed after the tests; withEnv runs fn with
  // DEDUPD_TOKEN set to value (unset when undefined).
  const client = (server, options = {}) => {
    const c = new dedupd.Client(server.addr, { timeout: 10, ...options });
    clients.push(c);
    return c;
  };
  const withEnv = (value, fn) => {
    const saved = process.env.DEDUPD_TOKEN;
    if (value === undefined) delete process.env.DEDUPD_TOKEN;
    else process.env.DEDUPD_TOKEN = value;
    try {
      return fn();
    } finally {
      if (saved === undefined) delete process.env.DEDUPD_TOKEN;
      else process.env.DEDUPD_TOKEN = saved;
    }
  };
  const acquires = async (c, consumer = 'shop') => {
    const resp = await c.claim(consumer, uniqueKey());
    assert.equal(resp.outcome, 'OUTCOME_ACQUIRED');
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dedupd-node-pki-'));
    pki = makePKI(dir);
    ca = fs.readFileSync(pki.ca);
    const auth = authFile(dir, TOKENS, pki.client_subject, ['shop']);
    const tlsFlags = ['--tls-cert', pki.server_cert, '--tls-key', pki.server_key];
    [plain, tls, mtls] = await Promise.all([
      startServer(['--auth-tokens', auth]),
      startServer(['--auth-tokens', auth, ...tlsFlags]),
      startServer(['--auth-tokens', auth, ...tlsFlags, '--tls-client-ca', pki.ca]),
    ]);
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all([plain, tls, mtls].filter(Boolean).map((s) => s.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sends the token option; it covers its consumer only', async () => {
    const c = client(plain, { token: SHOP_TOKEN });
    await acquires(c);
    const err = await c.claim('payments', uniqueKey()).catch((e) => e);
    assert.ok(err instanceof dedupd.PermissionDenied, err);
    assert.equal(err.reason, 'PERMISSION_DENIED');
    assert.ok(!err.message.includes(SHOP_TOKEN));
  });

  it('takes the token from DEDUPD_TOKEN unless one is given', async () => {
    const fromEnv = withEnv(SHOP_TOKEN, () => client(plain));
    await acquires(fromEnv);
    const explicit = withEnv(SHOP_TOKEN, () => client(plain, { token: ADMIN_TOKEN }));
    await assert.rejects(explicit.claim('shop', uniqueKey()), dedupd.PermissionDenied);
    const none = withEnv(SHOP_TOKEN, () => client(plain, { token: '' }));
    await assert.rejects(none.claim('shop', uniqueKey()), dedupd.Unauthenticated);
  });

  it('is UNAUTHENTICATED without a token or with an unknown one', async () => {
    for (const token of [undefined, 'tok-nobody']) {
      const c = withEnv(undefined, () => client(plain, { token }));
      const err = await c.lookup('shop', 'k').catch((e) => e);
      assert.ok(err instanceof dedupd.Unauthenticated, err);
      assert.equal(err.reason, 'UNAUTHENTICATED');
    }
  });

  it('sends a plaintext token only to loopback, and never shows it', () => {
    assert.throws(() => new dedupd.Client('dedupd.example:7070', { token: SHOP_TOKEN }), /plaintext/);
    const c = client({ addr: '127.0.0.1:1' }, { token: SHOP_TOKEN });
    assert.ok(!require('node:util').inspect(c).includes(SHOP_TOKEN));
  });

  it('checks every address of a multi-address target before a plaintext token', () => {
    const cases = [
      // [target, loopback]: the oracle is the rule written in docs/operations.md,
      // with the cases of the Go side's internal/loopback test and the
      // Python client's addition (behind an explicit resolver only an address)
      ['127.0.0.1:7070', true], ['127.0.0.2:1', true], ['localhost:7070', true], ['[::1]:7070', true], ['127.0.0.1', true],
      ['unix:/run/dedupd.sock', true], ['unix-abstract:dedupd', true], ['dns:///127.0.0.1:7070', true],
      ['dns:127.0.0.1:7070', true], ['passthrough:///localhost:7070', true], ['dns://8.8.8.8/127.0.0.1:7070', true],
      ['ipv4:127.0.0.1:1,127.0.0.2:2', true], ['ipv6:[::1]:1', true], ['ipv6:[::1]:1,[0:0:0:0:0:0:0:1]:2', true],
      ['ipv6:[::1]:1,[::ffff:127.0.0.1]:17071', true], // IPv4-mapped 127.0.0.1 is loopback, as in Go
      ['10.0.0.1:7070', false], ['0.0.0.0:7070', false], [':7070', false], ['[::]:7070', false], ['dedupd:7070', false],
      ['localhost.example.com:7070', false], ['dns:///dedupd.example:7070', false], ['dns://127.0.0.1/10.0.0.1:7070', false],
      ['dns://127.0.0.1', false], ['ipv4:127.0.0.1:1,10.0.0.1:2', false], ['ipv4:10.0.0.1:2,127.0.0.1:1', false],
      ['ipv6:[::1]:1,[2001:db8::1]:2', false], ['ipv6:[::1]:1,[::ffff:10.0.0.1]:2', false],
      ['127.0.0.1:1,10.0.0.1:2', false], ['128.0.0.1:1', false], ['', false],
      ['dns://8.8.8.8/localhost:7070', false], ['dns:///localhost:7070', true], ['dns:[::1]:1,[2001:db8::1]:2', false],
      ['ipv6:::1', true], ['ipv4:///127.0.0.1:1', true], ['[::1]x:7070', false], ['xds:///localhost', false],
    ];
    for (const [target, loopback] of cases) {
      assert.equal(isLoopback(target), loopback, target);
      if (loopback) continue;
      assert.throws(() => new dedupd.Client(target, { token: SHOP_TOKEN }), /plaintext/, target);
    }
  });

  it('runs do() over TLS with the CA and a token', async () => {
    const c = client(tls, { tls: { rootCerts: ca }, token: SHOP_TOKEN });
    let runs = 0;
    for (let i = 0; i < 2; i++) {
      const out = await dedupd.do(c, 'shop', 'tls-do', async () => { runs++; return Buffer.from('done'); },
        { digest: dedupd.digestBytes('req') });
      assert.equal(out.result.toString(), 'done');
    }
    assert.equal(runs, 1);
  });

  it('does not get through TLS without the CA, or in plaintext', async () => {
    for (const options of [{ tls: true }, {}]) {
      const c = client(tls, { ...options, token: SHOP_TOKEN, timeout: 5 });
      await assert.rejects(c.lookup('shop', 'k'), dedupd.Unavailable);
    }
  });

  it('authenticates with a listed client certificate and no token', async () => {
    const tlsOption = { rootCerts: ca, certChain: fs.readFileSync(pki.client_cert), privateKey: fs.readFileSync(pki.client_key) };
    const c = client(mtls, { tls: tlsOption, token: '' });
    await acquires(c);
    await assert.rejects(c.claim('payments', uniqueKey()), dedupd.PermissionDenied);
    const noCert = client(mtls, { tls: { rootCerts: ca }, token: SHOP_TOKEN, timeout: 5 });
    await assert.rejects(noCert.lookup('shop', 'k'), dedupd.Unavailable);
    assert.throws(() => new dedupd.Client('127.0.0.1:1', { tls: { certChain: Buffer.from('x') } }), /both/);
  });
});
