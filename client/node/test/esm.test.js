'use strict';
// The package through its exports map, by name (Node resolves a package's
// own name from inside it): import gets src/index.mjs, require gets
// src/index.js, and the two expose the same names bound to the same values,
// so an ESM importer and a CommonJS caller share one Client class and one
// set of error classes. The oracle is the CommonJS module's own exports.
// scripts/pack-install.js runs the same import from an installed copy.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { describe, it } = require('node:test');
const { pathToFileURL } = require('node:url');

const cjs = require('../src');

describe('ES module entry point', () => {
  it('resolves by package name: import to index.mjs, require to index.js', () => {
    const src = path.join(__dirname, '..', 'src');
    assert.equal(require.resolve('@dedupd/client'), path.join(src, 'index.js'));
    const resolved = execFileSync(process.execPath, ['--input-type=module', '-e',
      "process.stdout.write(import.meta.resolve('@dedupd/client'))"], { cwd: path.join(__dirname, '..'), encoding: 'utf8' });
    assert.equal(resolved, pathToFileURL(path.join(src, 'index.mjs')).href);
  });

  it('exports exactly the CommonJS names, bound to the same values', async () => {
    const esm = await import('@dedupd/client');
    assert.equal(esm.default, cjs);
    const named = Object.keys(esm).filter((name) => name !== 'default');
    assert.deepEqual(named.sort(), Object.keys(cjs).sort());
    for (const name of named) assert.equal(esm[name], cjs[name], name);
    assert.ok(new esm.AbortError() instanceof cjs.DedupError);
  });

  it('gives @dedupd/client/receipts the same way: exactly receipts.js\'s names, bound to the same values', async () => {
    const receipts = require('@dedupd/client/receipts');
    assert.equal(require.resolve('@dedupd/client/receipts'), path.join(__dirname, '..', 'src', 'receipts.js'));
    const esm = await import('@dedupd/client/receipts');
    assert.equal(esm.default, receipts);
    const named = Object.keys(esm).filter((name) => name !== 'default');
    assert.deepEqual(named.sort(), Object.keys(receipts).sort());
    for (const name of named) assert.equal(esm[name], receipts[name], name);
    assert.ok(new esm.StaleReceipt('c', 'k') instanceof receipts.StaleReceipt);
  });
});
