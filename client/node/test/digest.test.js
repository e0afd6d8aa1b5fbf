'use strict';
// Every vector of client/testdata/digest-vectors.json, which the Go and
// Python clients check too, plus what a JavaScript value can reach beyond.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const dedupd = require('../src');
const { deterministicBytes } = require('../src/digest');

const VECTORS = path.join(__dirname, '..', '..', 'testdata', 'digest-vectors.json');
const ClaimRequest = dedupd.proto.root.lookupType('dedup.v1.ClaimRequest');

// The vectors give proto inputs as protojson of a ClaimRequest; protobufjs
// reads plain objects, so the two protojson spellings used are converted.
function fromProtoJSON(text) {
  const obj = JSON.parse(text);
  if (obj.leaseTtl !== undefined) {
    const m = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(obj.leaseTtl);
    assert.ok(m, `unexpected duration ${obj.leaseTtl}`);
    obj.leaseTtl = { seconds: Number(m[1]), nanos: Number((m[2] || '').padEnd(9, '0')) };
  }
  if (obj.digest !== undefined) obj.digest = Buffer.from(obj.digest, 'base64');
  return obj;
}

test('every shared digest vector', async (t) => {
  const vectors = JSON.parse(fs.readFileSync(VECTORS, 'utf8'));
  assert.deepEqual(new Set(vectors.map((v) => v.kind)), new Set(['bytes', 'json', 'proto']));
  for (const v of vectors) {
    await t.test(v.name, () => {
      let got;
      if (v.kind === 'bytes') {
        got = dedupd.digestBytes(Buffer.from(v.input, 'base64'));
      } else if (v.kind === 'json') {
        assert.equal(dedupd.canonicalJSON(JSON.parse(v.input)).toString('utf8'), v.canonical);
        got = dedupd.digestJSONText(v.input);
      } else {
        const msg = fromProtoJSON(v.input);
        if (v.wire_base64 !== undefined) {
          assert.equal(deterministicBytes(ClaimRequest, msg).toString('base64'), v.wire_base64);
        }
        got = dedupd.digestProto(ClaimRequest, msg);
      }
      assert.equal(got.length, 33);
      assert.equal(got.toString('hex'), v.digest_hex);
    });
  }
});

test('protobuf defaults set explicitly are not written', () => {
  const explicit = dedupd.digestProto(ClaimRequest, { consumer: 'c', key: 'k', owner: '', digest: Buffer.alloc(0) });
  assert.deepEqual(explicit, dedupd.digestProto(ClaimRequest, { consumer: 'c', key: 'k' }));
  const instance = ClaimRequest.create({ consumer: 'c', key: 'k', owner: '' });
  assert.deepEqual(dedupd.digestProto(ClaimRequest, instance), explicit);
});

test('canonical JSON of values no JSON text spells', () => {
  assert.equal(dedupd.canonicalJSON({ b: 1, a: [1.0, 2] }).toString(), '{"a":[1,2],"b":1}');
  assert.equal(dedupd.canonicalJSON([1e21, 1e-7, -0, 2 ** 60]).toString(), '[1e+21,1e-7,0,1152921504606847000]');
  assert.equal(dedupd.canonicalJSON({ '\u{1F600}': 1, '\uffff': 2 }).toString(), '{"\u{1F600}":1,"\uffff":2}');
});

test('canonical JSON refuses what JSON cannot say', () => {
  for (const bad of [NaN, Infinity, '\ud800', undefined, () => 1, new Date(0), 10n]) {
    assert.throws(() => dedupd.canonicalJSON(bad), TypeError, String(bad));
  }
  assert.throws(() => dedupd.digestJSONText('{"a":1,"b":{"a":2},"a":3}'), /duplicate member name "a"/);
  assert.throws(() => dedupd.digestJSONText('[NaN]'), SyntaxError);
  // The same name in sibling and nested objects is fine.
  assert.equal(dedupd.digestJSONText('{"a":{"a":1},"b":[{"a":1},{"a":2}]}').length, 33);
});
