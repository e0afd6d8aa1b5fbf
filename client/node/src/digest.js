'use strict';
// Digests of request content that every dedupd client computes alike: one
// version byte, 0x01, then SHA-256 of the input (33 bytes). The input is the
// raw bytes; the RFC 8785 (JCS) canonical form of a JSON value; or the
// deterministic serialization of a protobuf message.
// client/testdata/digest-vectors.json holds the vectors the Go, Python and
// Node clients all check.

const crypto = require('node:crypto');
const protobuf = require('protobufjs');

const VERSION = 0x01;

/** Digest of raw bytes (a string is encoded as UTF-8 first). */
function digestBytes(data) {
  const hash = crypto.createHash('sha256').update(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  return Buffer.concat([Buffer.from([VERSION]), hash.digest()]);
}

/** Digest of a JSON value (object, array, string, finite number, boolean, null). */
function digestJSON(value) {
  return digestBytes(canonicalJSON(value));
}

/** Digest of a JSON text, parsed strictly first (no duplicate member names). */
function digestJSONText(text) {
  return digestJSON(parseJSON(text));
}

/**
 * The RFC 8785 canonical serialization of value, as a UTF-8 Buffer.
 * JSON.stringify already formats numbers as ES6 Number.prototype.toString
 * and escapes strings as JCS prescribes; what it leaves to us is member
 * order (UTF-16 code units, which is what Array.prototype.sort compares)
 * and refusing what JSON cannot say.
 */
function canonicalJSON(value) {
  return Buffer.from(serialize(value), 'utf8');
}

function serialize(value) {
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`${value} is not a JSON number`);
    return JSON.stringify(value);
  }
  if (typeof value === 'string') {
    if (!value.isWellFormed()) throw new TypeError('string has a lone surrogate: not Unicode text');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(serialize).join(',')}]`;
  if (typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${serialize(k)}:${serialize(value[k])}`).join(',')}}`;
  }
  throw new TypeError(`${typeof value} is not a JSON value`);
}

/** Parses I-JSON: refuses duplicate member names, which two clients could read differently. */
function parseJSON(text) {
  const str = Buffer.isBuffer(text) ? new TextDecoder('utf-8', { fatal: true }).decode(text) : text;
  const value = JSON.parse(str);
  // JSON.parse keeps the last of duplicate names silently; a second pass
  // over the (now known valid) text catches them.
  checkNoDuplicates(str);
  return value;
}

function checkNoDuplicates(str) {
  const stack = [];
  let expectKey = false;
  for (let i = 0; i < str.length; i++) {
    const ch = str[i];
    if (ch === '"') {
      let j = i + 1;
      while (str[j] !== '"') j += str[j] === '\\' ? 2 : 1;
      if (expectKey && stack.length && stack[stack.length - 1] !== null) {
        const name = JSON.parse(str.slice(i, j + 1));
        const seen = stack[stack.length - 1];
        if (seen.has(name)) throw new SyntaxError(`duplicate member name ${JSON.stringify(name)}`);
        seen.add(name);
      }
      expectKey = false;
      i = j;
    } else if (ch === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === '[') {
      stack.push(null);
    } else if (ch === '}' || ch === ']') {
      stack.pop();
    } else if (ch === ',') {
      expectKey = stack.length > 0 && stack[stack.length - 1] !== null;
    }
  }
}

/**
 * Digest of a protobuf message's deterministic serialization. type is a
 * protobufjs Type (e.g. require('@dedupd/client').proto.root.lookupType(...))
 * and message a plain object or an instance of it. Fields left at their
 * proto3 default are not written, as the Go and Python encoders do;
 * protobufjs would write a default that was set explicitly. Map fields are
 * not supported: their order is not deterministic across languages.
 */
function digestProto(type, message) {
  return digestBytes(deterministicBytes(type, message));
}

function deterministicBytes(type, message) {
  const msg = type.fromObject(message instanceof protobuf.Message ? type.toObject(message) : message);
  stripDefaults(type, msg);
  return Buffer.from(type.encode(msg).finish());
}

function stripDefaults(type, msg) {
  type.resolveAll();
  for (const field of type.fieldsArray) {
    const v = msg[field.name];
    if (v === undefined || v === null) continue;
    if (field.map) throw new TypeError(`digestProto: map field ${field.name} has no deterministic order`);
    if (field.resolvedType instanceof protobuf.Type) {
      for (const m of field.repeated ? v : [v]) stripDefaults(field.resolvedType, m);
      continue;
    }
    if (field.repeated || field.partOf || field.hasPresence) continue;
    if (isDefault(v)) delete msg[field.name];
  }
}

function isDefault(v) {
  if (v === '' || v === 0 || v === false) return true;
  if (v instanceof Uint8Array) return v.length === 0;
  if (typeof v === 'object' && 'low' in v && 'high' in v) return v.low === 0 && v.high === 0; // Long
  return false;
}

module.exports = { VERSION, digestBytes, digestJSON, digestJSONText, digestProto, canonicalJSON, parseJSON, deterministicBytes };
