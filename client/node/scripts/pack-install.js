'use strict';
// The package as a user gets it: `npm pack` the client, check that the
// tarball holds what the client needs and nothing else, install it into a
// scratch project in a temporary directory (its dependencies come from the
// npm registry), and run the README walkthrough and the typed example
// (compiled by tsc against the installed declarations) with that copy
// against a real dedupd. Run by CI: npm run test:pack (needs the registry,
// so it is not part of `node --test`).

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { before, after, describe, it } = require('node:test');
const { pathToFileURL } = require('node:url');

const { PROTO_FILES } = require('../src/proto');
const { startServer } = require('../testing/server');
const { testDatabase } = require('../testing/pg');

const PACKAGE_DIR = path.resolve(__dirname, '..');
const REPO = path.resolve(PACKAGE_DIR, '..', '..');
const NPM_QUIET = ['--no-audit', '--no-fund', '--loglevel=error'];

/** Runs a command and returns its stdout; its stderr goes to ours. */
function run(cmd, args, options = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });
}

describe('npm pack, then install into a scratch project', () => {
  const db = testDatabase(); // for the receipts example
  let tmp;
  let project;
  let server;
  let packed;

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dedupd-node-pack-'));
    [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp, ...NPM_QUIET], { cwd: PACKAGE_DIR }));
    project = path.join(tmp, 'project');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true }));
    run('npm', ['install', ...NPM_QUIET, path.join(tmp, packed.filename)], { cwd: project });
    server = await startServer();
  });
  after(async () => {
    if (server) await server.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('packs only the sources, their declarations, the protos and the README', () => {
    const files = packed.files.map((f) => f.path).sort();
    const protos = PROTO_FILES.map((f) => `proto/${f}`);
    const extra = files.filter((f) => !/^(src\/[a-z]+\.(js|mjs|d\.ts|d\.mts)|package\.json|README\.md)$/.test(f) && !protos.includes(f));
    assert.deepEqual(extra, [], 'the tarball should not carry these');
    for (const need of ['src/index.js', 'src/index.mjs', 'src/index.d.ts', 'src/powertools.js', 'src/powertools.mjs',
      'src/powertools.d.ts', 'src/powertools.d.mts', 'src/receipts.js', 'src/receipts.mjs', 'src/receipts.d.ts',
      'src/receiptsql.js', 'src/receipttx.js', 'src/receiptpolicy.js', ...protos]) {
      assert.ok(files.includes(need), `the tarball lacks ${need}`);
    }
    assert.ok(!fs.existsSync(path.join(PACKAGE_DIR, 'proto')), 'postpack left client/node/proto behind');
  });

  it('installs a copy that loads its own protos, identical to the repository\'s', () => {
    const installed = path.join(project, 'node_modules', '@dedupd', 'client');
    const protoDir = run('node', ['-e', "process.stdout.write(require('@dedupd/client').proto.protoDir())"], { cwd: project });
    assert.equal(protoDir, path.join(installed, 'proto'));
    for (const file of PROTO_FILES) {
      assert.equal(fs.readFileSync(path.join(protoDir, file), 'utf8'), fs.readFileSync(path.join(REPO, 'proto', file), 'utf8'), file);
    }
  });

  it('imports the installed package by name from an ES module, and require() still works', () => {
    // An .mjs file: an ES module whatever the scratch project's "type".
    // Named imports (do included), one call against the server, and the
    // same classes as require() gives in the same process.
    const script = path.join(project, 'esm-import.mjs');
    fs.writeFileSync(script, [
      "import { createRequire } from 'node:module';",
      "import dedupdDefault, { Client, do as doOnce, AbortError, RecordNotFound } from '@dedupd/client';",
      "const cjs = createRequire(import.meta.url)('@dedupd/client');",
      "if (cjs !== dedupdDefault || cjs.Client !== Client || cjs.do !== doOnce) throw new Error('ESM and CommonJS differ');",
      "const c = new Client(process.env.DEDUPD_ADDR);",
      "const err = await c.lookup('node-esm', `absent-${process.pid}`).catch((e) => e);",
      "if (!(err instanceof RecordNotFound)) throw err;",
      "const aborted = await c.lookup('node-esm', 'k', { signal: AbortSignal.abort() }).catch((e) => e);",
      "if (!(aborted instanceof AbortError)) throw aborted;",
      "c.close();",
      "console.log(`esm import: ok ${import.meta.resolve('@dedupd/client')}`);",
    ].join('\n'));
    const out = run('node', [script], { cwd: project, env: { ...process.env, DEDUPD_ADDR: server.addr } });
    const installed = path.join(project, 'node_modules', '@dedupd', 'client');
    assert.equal(out.trim(), `esm import: ok ${pathToFileURL(path.join(installed, 'src', 'index.mjs')).href}`);
  });

  it('runs the README walkthrough with the installed package', () => {
    const script = path.join(project, 'walkthrough.js');
    fs.copyFileSync(path.join(REPO, 'examples', 'walkthrough', 'walkthrough.js'), script);
    const out = run('node', [script], { cwd: project, env: { ...process.env, DEDUPD_ADDR: server.addr } });
    assert.match(out, /walkthrough: ok/);
  });

  it('type-checks and runs the typed example against the installed declarations', () => {
    for (const f of ['typed.ts', 'typed-http.ts']) fs.copyFileSync(path.join(PACKAGE_DIR, 'examples', f), path.join(project, f));
    const tsconfig = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'tsconfig.json'), 'utf8'));
    const { paths, noEmit, ...compilerOptions } = tsconfig.compilerOptions; // resolve the installed package instead
    fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { ...compilerOptions, outDir: 'out', typeRoots: [path.join(PACKAGE_DIR, 'node_modules', '@types')] },
      files: ['typed.ts', 'typed-http.ts'], // typed-http.ts: the ./http subpath export resolves
    }));
    run(path.join(PACKAGE_DIR, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], { cwd: project });
    const out = run('node', [path.join('out', 'typed.js')], { cwd: project, env: { ...process.env, DEDUPD_ADDR: server.addr } });
    assert.match(out, /typed example: ok/);
    const http = run('node', ['-e', "const h = require('@dedupd/client/http'); if (typeof h.idempotency !== 'function') process.exit(1); process.stdout.write('ok')"], { cwd: project });
    assert.equal(http, 'ok');
  });

  it('runs a Powertools handler on the installed layer, from CommonJS and an ES module, typed', () => {
    // Powertools is an optional peer: installed here as a user would, at
    // the versions of the lockfile.
    const lock = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'package-lock.json'), 'utf8')).packages;
    const pinned = (name) => `${name}@${lock[`node_modules/${name}`].version}`;
    run('npm', ['install', ...NPM_QUIET, pinned('@aws-lambda-powertools/idempotency'), pinned('@types/aws-lambda')], { cwd: project });
    const env = { ...process.env, DEDUPD_ADDR: server.addr };
    const tsconfig = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'tsconfig.json'), 'utf8'));
    const { paths, noEmit, ...compilerOptions } = tsconfig.compilerOptions; // resolve the installed package instead
    for (const file of ['powertools.ts', 'powertools.mts']) {
      fs.copyFileSync(path.join(PACKAGE_DIR, 'examples', file), path.join(project, file));
    }
    fs.writeFileSync(path.join(project, 'tsconfig.powertools.json'), JSON.stringify({
      compilerOptions: { ...compilerOptions, outDir: 'out-powertools', typeRoots: [path.join(PACKAGE_DIR, 'node_modules', '@types')] },
      files: ['powertools.ts', 'powertools.mts'],
    }));
    run(path.join(PACKAGE_DIR, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.powertools.json'], { cwd: project });
    assert.match(run('node', [path.join('out-powertools', 'powertools.js')], { cwd: project, env }), /typed powertools example: ok/);
    assert.match(run('node', [path.join('out-powertools', 'powertools.mjs')], { cwd: project, env }), /typed powertools example \(ESM\): ok/);
  });
  it('runs the receipts example on the installed package with pg, typed against pg\'s declarations', (t) => {
    if (db.skip) return t.skip(db.skip);
    // pg is an optional peer: installed here as a user would, at the
    // versions of the lockfile.
    const lock = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'package-lock.json'), 'utf8')).packages;
    const pinned = (name) => `${name}@${lock[`node_modules/${name}`].version}`;
    run('npm', ['install', ...NPM_QUIET, pinned('pg'), pinned('@types/pg')], { cwd: project });
    fs.copyFileSync(path.join(PACKAGE_DIR, 'examples', 'receipts.ts'), path.join(project, 'receipts.ts'));
    const tsconfig = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'tsconfig.json'), 'utf8'));
    const { paths, noEmit, ...compilerOptions } = tsconfig.compilerOptions; // resolve the installed package instead
    fs.writeFileSync(path.join(project, 'tsconfig.receipts.json'), JSON.stringify({
      compilerOptions: { ...compilerOptions, outDir: 'out-receipts', typeRoots: [path.join(PACKAGE_DIR, 'node_modules', '@types')] },
      files: ['receipts.ts'],
    }));
    run(path.join(PACKAGE_DIR, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.receipts.json'], { cwd: project });
    const env = { ...process.env, DEDUPD_ADDR: server.addr, DATABASE_URL: db.url };
    assert.match(run('node', [path.join('out-receipts', 'receipts.js')], { cwd: project, env }), /receipts example: ok \(apple left=9 by token 1; 0 expired/);
  });
});
