'use strict';
// The TypeScript declarations (src/index.d.ts) against the JavaScript: every
// value the package exports is declared and every declared value exists,
// and examples/typed.ts (which tsc checks, see npm run typecheck) uses every
// declared name, values and types alike. The oracle for the runtime side is
// the module's own exports; for the declared side, the declaration text.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, it } = require('node:test');

const dedupd = require('../src');

const DTS = fs.readFileSync(path.join(__dirname, '..', 'src', 'index.d.ts'), 'utf8');
const EXAMPLE = fs.readFileSync(path.join(__dirname, '..', 'examples', 'typed.ts'), 'utf8');

/** Declared names: values (class, function, const, export {...}) and types (type, interface). */
function declared() {
  const values = new Set();
  const types = new Set();
  for (const m of DTS.matchAll(/^export (class|function|const|type|interface) ([A-Za-z_]\w*)/gm)) {
    (m[1] === 'type' || m[1] === 'interface' ? types : values).add(m[2]);
  }
  for (const m of DTS.matchAll(/^export \{([^}]*)\}/gm)) {
    for (const part of m[1].split(',')) values.add(part.trim().split(/\s+as\s+/).pop());
  }
  return { values, types };
}

describe('TypeScript declarations', () => {
  it('declare exactly the values the package exports', () => {
    const { values } = declared();
    assert.deepEqual([...values].sort(), Object.keys(dedupd).sort());
  });

  it('are all used by examples/typed.ts', () => {
    const { values, types } = declared();
    const unused = [...values].filter((v) => !new RegExp(`dedupd\\.${v}\\b`).test(EXAMPLE))
      .concat([...types].filter((t) => !new RegExp(`\\b${t}\\b`).test(EXAMPLE)));
    assert.deepEqual(unused, []);
  });
});
