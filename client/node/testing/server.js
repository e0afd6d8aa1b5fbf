'use strict';
// A real dedupd for the tests: built from this repository and started on the
// embedded store (its default engine) in a temporary directory, once per
// test file.
// DEDUPD_BIN names a prebuilt binary to use instead of building one.
// makePKI() makes a throwaway CA, server and client certificate with the
// repository's Go helper (client/dedupdtest/testpki), and authFile() writes
// an --auth-tokens file, for the tests of tokens and TLS. withClient() gives
// a describe block one Client on its own dedupd.

const { execFileSync, spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { before, after } = require('node:test');

const { Client } = require('../src');

const REPO = path.resolve(__dirname, '..', '..', '..');

/**
 * Starts dedupd serve on a free loopback port; extraArgs are more flags.
 * dataDir keeps the embedded store in a directory the caller owns (and
 * removes), so that a later server can open the same records; by default
 * the store lives in a temporary directory removed by stop().
 */
async function startServer(extraArgs = [], { dataDir } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dedupd-node-'));
  let bin = process.env.DEDUPD_BIN;
  if (!bin) {
    bin = path.join(dir, 'dedupd');
    execFileSync('go', ['build', '-o', bin, './cmd/dedupd'], { cwd: REPO, stdio: 'inherit' });
  }
  // --ready-file appears (whole) once dedupd serves; its first line is the
  // address it bound, and an "http ADDR" line names the HTTP API's (with
  // --http-listen).
  const ready = path.join(dir, 'ready');
  const proc = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--log-format', 'json', '--data-dir', dataDir || path.join(dir, 'data'),
    '--ready-file', ready, ...extraArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  const logs = [];
  readline.createInterface({ input: proc.stderr }).on('line', (line) => logs.push(line));
  const lines = await new Promise((resolve, reject) => {
    let exited = false;
    proc.once('exit', (code) => {
      exited = true;
      reject(new Error(`dedupd exited (${code}) before serving:\n${logs.join('\n')}`));
    });
    const poll = () => {
      if (exited) return;
      let content;
      try { content = fs.readFileSync(ready, 'utf8'); } catch { setTimeout(poll, 10); return; }
      resolve(content.split('\n'));
    };
    poll();
  });
  const addr = lines[0];
  const httpLine = lines.find((line) => line.startsWith('http '));
  return {
    addr,
    httpAddr: httpLine ? httpLine.slice('http '.length) : undefined,
    logs,
    async stop() {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Writes a CA, a server certificate for 127.0.0.1 and a client certificate
 * into dir; returns their paths and the client certificate's subject
 * ({ca, server_cert, server_key, client_cert, client_key, client_subject}).
 */
function makePKI(dir) {
  const out = execFileSync('go', ['run', './client/dedupdtest/testpki', dir], { cwd: REPO, encoding: 'utf8' });
  return JSON.parse(out);
}

/**
 * Writes an --auth-tokens file into dir; tokens are {token, consumers,
 * admin}. Only the tokens' SHA-256 goes in it.
 */
function authFile(dir, tokens, certSubject = null, certConsumers = []) {
  const doc = {
    tokens: tokens.map(({ token, consumers = [], admin = false }) => ({
      sha256: crypto.createHash('sha256').update(token).digest('hex'), consumers, admin,
    })),
  };
  if (certSubject) doc.certificates = [{ subject: certSubject, consumers: certConsumers }];
  const file = path.join(dir, 'auth.json'); // JSON is YAML
  fs.writeFileSync(file, JSON.stringify(doc));
  return file;
}

/** A key no other test uses, so tests share one server safely. */
function uniqueKey(prefix = 'k') {
  return `${prefix}-${crypto.randomUUID()}`;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Claims key until its current lease runs out and the claim acquires. */
async function takeOver(client, consumer, key, { digest, leaseTtl = 30, owner = 'taker', bound = 20 } = {}) {
  const deadline = Date.now() + bound * 1000;
  for (;;) {
    const resp = await client.claim(consumer, key, { digest, leaseTtl, owner });
    if (resp.outcome !== 'OUTCOME_IN_PROGRESS') return resp;
    if (Date.now() > deadline) throw new Error(`lease on ${key} never ran out`);
    const after = Number(resp.retryAfter.seconds) * 1000 + resp.retryAfter.nanos / 1e6;
    await sleep(Math.min(Math.max(after, 10), 500));
  }
}

/**
 * Registers before/after hooks on the enclosing describe block: a dedupd
 * and a Client on it for the block's tests, handed to onReady, and both
 * closed after them.
 */
function withClient(onReady) {
  let server;
  let client;
  before(async () => {
    server = await startServer();
    client = new Client(server.addr);
    onReady(client);
  });
  after(async () => {
    client.close();
    await server.stop();
  });
}

module.exports = { withClient, startServer, makePKI, authFile, uniqueKey, sleep, takeOver };
