'use strict';
// The parts of the HTTP middleware (http.js) that are pure functions: the
// Idempotency-Key syntax, the rules, the client scope, the fingerprint and
// the stored form of a response. They follow the Go middleware
// (client/httpidem) rule for rule; docs/gateway.md describes them.

const crypto = require('node:crypto');
const { STATUS_CODES } = require('node:http');

const MAX_KEY_CHARS = 255;
const FINGERPRINT_VERSION = 'httpidem-fingerprint-1';

/**
 * The key from the header's value (a string, or an array when repeated):
 * an RFC 8941 String ("a1", parameters after it ignored) or a bare token
 * (a1), both the same key, 1 to 255 printable ASCII characters. Throws an
 * Error whose message says what is wrong.
 */
function parseKey(value) {
  if (Array.isArray(value)) {
    if (value.length !== 1) throw new Error(`the header appears ${value.length} times; send it once`);
    [value] = value;
  }
  const v = String(value).replace(/^[ \t]+|[ \t]+$/g, '');
  let key;
  if (v.startsWith('"')) {
    let out = '';
    let i = 1;
    for (; i < v.length; i++) {
      const c = v.charCodeAt(i);
      if (v[i] === '"') break;
      if (v[i] === '\\') {
        if (v[i + 1] !== '"' && v[i + 1] !== '\\') throw new Error('a backslash in a quoted key must escape " or \\');
        out += v[++i];
      } else if (c < 0x20 || c > 0x7e) {
        throw new Error(`a quoted key holds printable ASCII only; character ${i} is not`);
      } else {
        out += v[i];
      }
    }
    if (i >= v.length) throw new Error('the quoted key has no closing quote');
    const rest = v.slice(i + 1).replace(/^[ \t]+/, '');
    if (rest !== '' && rest[0] !== ';') throw new Error('unexpected text after the quoted string');
    key = out;
  } else {
    const bad = v.search(/[^\x21-\x7e]|["",;]/);
    if (bad >= 0) throw new Error(`a bare key may hold printable ASCII but no space, quote, comma or semicolon; character ${bad} is not`);
    key = v;
  }
  if (key === '') throw new Error('the key is empty');
  if (key.length > MAX_KEY_CHARS) throw new Error(`the key is ${key.length} characters, more than ${MAX_KEY_CHARS}`);
  return key;
}

const DEFAULT_RULES = [{ method: 'POST', pathPrefix: '/', need: 'required' }, { method: 'PATCH', pathPrefix: '/', need: 'required' }];
const NEEDS = ['required', 'optional', 'off'];

/** Reads "METHOD /prefix=required|optional|off", or checks a rule object. */
function parseRule(rule) {
  let r = rule;
  if (typeof rule === 'string') {
    const m = /^\s*(\S+)\s+(\S+)\s*=\s*(\S+)\s*$/.exec(rule);
    if (!m) throw new Error(`rule ${JSON.stringify(rule)}: want "METHOD /prefix=required|optional|off"`);
    r = { method: m[1], pathPrefix: m[2], need: m[3] };
  }
  const method = String(r.method || '').toUpperCase();
  if (!method) throw new Error('a rule needs a method ("*" for every method)');
  if (!String(r.pathPrefix || '').startsWith('/')) throw new Error(`rule ${method} ${r.pathPrefix}: the path prefix must start with /`);
  if (!NEEDS.includes(r.need)) throw new Error(`rule ${method} ${r.pathPrefix}: ${JSON.stringify(r.need)} is not one of ${NEEDS.join(', ')}`);
  return { method, pathPrefix: r.pathPrefix, need: r.need };
}

/** Whether path is prefix or below it, segment by segment. */
function under(path, prefix) {
  const p = prefix.replace(/\/$/, '');
  return p === '' || path === p || path.startsWith(`${p}/`);
}

/** The need of a request: the most specific rule (longest prefix, then a named method, then the later rule). */
function need(rules, method, path) {
  let best = 'off';
  let bestLen = -1;
  let bestNamed = false;
  for (const r of [...DEFAULT_RULES, ...rules]) {
    if ((r.method !== '*' && r.method !== method) || !under(path, r.pathPrefix)) continue;
    const named = r.method !== '*';
    const n = r.pathPrefix.replace(/\/$/, '').length;
    if (n > bestLen || (n === bestLen && (named || !bestNamed))) [best, bestLen, bestNamed] = [r.need, n, named];
  }
  return best;
}

/** The client scope: a hash of the identity header's value, or "anonymous". */
function scope(req, header) {
  const v = req.headers[header];
  if (v === undefined) return 'anonymous';
  const h = crypto.createHash('sha256');
  for (const line of Array.isArray(v) ? v : [v]) h.update(line).update(Buffer.from([0]));
  return `id:${h.digest('base64url')}`;
}

function lengthPrefixed(h, s) {
  const b = Buffer.isBuffer(s) ? s : Buffer.from(s, 'latin1');
  const n = Buffer.alloc(4);
  n.writeUInt32BE(b.length);
  h.update(n).update(b);
}

/** The digest a key is bound to: method, path, query, Content-Type, body, configured headers. */
function fingerprint(req, body, headers) {
  const h = crypto.createHash('sha256');
  const [path, ...query] = req.url.split('?');
  lengthPrefixed(h, FINGERPRINT_VERSION);
  lengthPrefixed(h, req.method);
  lengthPrefixed(h, path);
  lengthPrefixed(h, query.join('?'));
  lengthPrefixed(h, String(req.headers['content-type'] || ''));
  lengthPrefixed(h, crypto.createHash('sha256').update(body).digest());
  for (const name of [...new Set(headers.map((n) => n.toLowerCase()))].sort()) {
    lengthPrefixed(h, name);
    const v = req.headers[name];
    const values = v === undefined ? [] : (Array.isArray(v) ? v : [v]);
    const n = Buffer.alloc(4);
    n.writeUInt32BE(values.length);
    h.update(n);
    for (const value of values) lengthPrefixed(h, value);
  }
  return h.digest();
}

// The headers of one connection (RFC 9110 7.6.1), and Date and
// Content-Length, which a replay sets afresh.
const HOP_BY_HOP = ['connection', 'proxy-connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'date', 'content-length'];

/** headers (lower-case names, as res.getHeaders() gives) less the hop-by-hop ones and own. */
function storable(headers, own) {
  const drop = new Set([...HOP_BY_HOP, ...own.map((n) => n.toLowerCase())]);
  for (const c of [].concat(headers.connection || [])) {
    for (const n of String(c).split(',')) drop.add(n.trim().toLowerCase());
  }
  return Object.fromEntries(Object.entries(headers).filter(([n]) => !drop.has(n)));
}

/** The stored form: an HTTP/1.1 response message, as the Go middleware stores it. */
function encodeResponse(status, headers, body) {
  let head = `HTTP/1.1 ${String(status).padStart(3, '0')} ${STATUS_CODES[status] || ''}\r\n`;
  for (const name of Object.keys(headers).sort()) {
    for (const v of [].concat(headers[name])) head += `${name}: ${v}\r\n`;
  }
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Reads a stored response back: {status, headers, body}. */
function decodeResponse(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) throw new Error('stored response: no end of headers');
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3})/.exec(lines[0]);
  if (!m) throw new Error('stored response: no status line');
  const headers = {};
  let length = null;
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).toLowerCase();
    const value = line.slice(i + 1).trim();
    if (name === 'content-length') { length = Number(value); continue; }
    headers[name] = headers[name] === undefined ? value : [].concat(headers[name], value);
  }
  const body = buf.subarray(end + 4);
  if (length !== body.length) throw new Error('stored response: the body is not Content-Length long');
  return { status: Number(m[1]), headers, body };
}

module.exports = { parseKey, parseRule, need, scope, fingerprint, storable, encodeResponse, decodeResponse, MAX_KEY_CHARS };
