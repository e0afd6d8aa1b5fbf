'use strict';
// A real dedupd for the browser test: the binary CI built ($DEDUPD_BIN) or
// one built from this checkout, serving the embedded store in a temporary
// directory with --http-listen and an --auth-tokens file of two tokens: an
// admin of every consumer, and a reader of "payments" only.

const { execFileSync, spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..', '..');

const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');

async function startDedupd() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dedupd-console-'));
  let bin = process.env.DEDUPD_BIN;
  if (!bin) {
    bin = path.join(dir, 'dedupd');
    execFileSync('go', ['build', '-o', bin, './cmd/dedupd'], { cwd: REPO, stdio: 'inherit' });
  }
  const tokens = { admin: crypto.randomBytes(16).toString('hex'), reader: crypto.randomBytes(16).toString('hex') };
  const authFile = path.join(dir, 'tokens.json');
  fs.writeFileSync(authFile, JSON.stringify({ tokens: [
    { name: 'ops-admin', sha256: sha256(tokens.admin), consumers: ['*'], admin: true },
    { name: 'payments-reader', sha256: sha256(tokens.reader), consumers: ['payments'], admin: false },
  ] }));
  const ready = path.join(dir, 'ready');
  const logs = [];
  const proc = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0', '--auth-tokens', authFile,
    '--data-dir', path.join(dir, 'data'), '--ready-file', ready, '--log-format', 'json', '--log-all-calls'], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr.on('data', (d) => logs.push(String(d)));
  const lines = await new Promise((resolve, reject) => {
    let exited = false;
    proc.once('exit', (code) => { exited = true; reject(new Error(`dedupd exited (${code}):\n${logs.join('')}`)); });
    const poll = () => {
      if (exited) return;
      try { resolve(fs.readFileSync(ready, 'utf8').split('\n')); } catch { setTimeout(poll, 20); }
    };
    poll();
  });
  const httpAddr = lines.find((l) => l.startsWith('http ')).slice(5);
  return {
    base: `http://${httpAddr}`,
    tokens,
    logs,
    async stop() {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An API caller with one token: call('DedupService', 'Claim', body). */
function apiClient(base, token) {
  return async function call(service, method, body) {
    const resp = await fetch(`${base}/dedup.v1.${service}/${method}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    const data = await resp.json();
    return { status: resp.status, body: data };
  };
}

module.exports = { startDedupd, apiClient, REPO };
