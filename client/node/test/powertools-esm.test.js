'use strict';
// @dedupd/client/powertools through the exports map: import gets
// src/powertools.mjs, built on Powertools' ES module build, require gets
// src/powertools.js, on its CommonJS build, so that the layer extends the
// BasePersistenceLayer of the makeIdempotent the application loaded (an
// ES module application's makeIdempotent and its types know only the ES
// module build's). Powertools' own modules are the oracle.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { describe, it } = require('node:test');

const PACKAGE_DIR = path.join(__dirname, '..');

describe('@dedupd/client/powertools entry points', () => {
  it('require: src/powertools.js, extending the CommonJS BasePersistenceLayer', () => {
    assert.equal(require.resolve('@dedupd/client/powertools'), path.join(PACKAGE_DIR, 'src', 'powertools.js'));
    const { DedupdPersistenceLayer } = require('@dedupd/client/powertools');
    const { BasePersistenceLayer } = require('@aws-lambda-powertools/idempotency/persistence');
    assert.ok(DedupdPersistenceLayer.prototype instanceof BasePersistenceLayer);
  });

  it('import: src/powertools.mjs, extending the ES module BasePersistenceLayer', () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', [
      "import { DedupdPersistenceLayer } from '@dedupd/client/powertools';",
      "import { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';",
      "process.stdout.write(JSON.stringify([import.meta.resolve('@dedupd/client/powertools'),",
      '  DedupdPersistenceLayer.prototype instanceof BasePersistenceLayer]));',
    ].join('\n')], { cwd: PACKAGE_DIR, encoding: 'utf8' });
    const [resolved, extendsEsm] = JSON.parse(out);
    assert.ok(resolved.endsWith('/src/powertools.mjs'), resolved);
    assert.equal(extendsEsm, true);
  });
});
