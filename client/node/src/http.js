'use strict';
// @dedupd/client/http: an Idempotency-Key middleware for node:http and
// Express-style (req, res, next) handlers, on this client's do(). It
// behaves as the Go middleware and `dedupd gateway` do (docs/gateway.md,
// draft-ietf-httpapi-idempotency-key-header): a POST or PATCH needs an
// Idempotency-Key (400 without), a key reused with another request gets
// 422, a retry while the first runs waits up to `wait` seconds and then
// gets 409 with Retry-After, and a retry after it gets the first response
// byte for byte with Idempotent-Replayed: true. 5xx responses release the
// key by default (on5xx), so the retry runs again. Errors are RFC 9457
// problem+json.
//
// The body of a keyed request is read whole (bounded by maxRequestBytes,
// 413 above it) before the handler runs, because it is fingerprinted
// first. The handler behind then finds it in req.rawBody (and req.body,
// when nothing set one). A body parser placed before the middleware must
// keep the raw bytes in req.rawBody (express.json's verify option).

const { doOnce } = require('./do');
const { Terminal } = require('./terminal');
const { DigestMismatch, InProgressTimeout, InvalidRequest, Rejected, Unavailable } = require('./errors');
const parts = require('./httpparts');
const { capture } = require('./httpcapture');
const problems = require('./httpproblem');

const REASON_NOT_STORED = 'HTTP_RESPONSE_NOT_STORED';

function options(o) {
  if (!o || !o.client || !o.consumer) throw new TypeError('idempotency() needs {client, consumer}');
  if (o.on5xx !== undefined && !['release', 'store', 'keep'].includes(o.on5xx)) {
    throw new TypeError(`on5xx must be release, store or keep, not ${JSON.stringify(o.on5xx)}`);
  }
  const lower = (v, d) => String(v || d).toLowerCase();
  return {
    client: o.client, consumer: o.consumer,
    rules: (o.rules || []).map(parts.parseRule),
    wait: o.wait === undefined ? 10 : o.wait,
    maxStoredResponseBytes: o.maxStoredResponseBytes || 1 << 20,
    maxRequestBytes: o.maxRequestBytes || 1 << 20,
    leaseTtl: o.leaseTtl || 30, timeout: o.timeout || 60, on5xx: o.on5xx || 'release',
    identityHeader: lower(o.identityHeader, 'authorization'),
    fingerprintHeaders: o.fingerprintHeaders || [],
    keyHeader: lower(o.keyHeader, 'idempotency-key'), fencingHeader: lower(o.fencingHeader, 'dedupd-fencing-token'),
    replayedHeader: lower(o.replayedHeader, 'idempotent-replayed'), retentionHeader: lower(o.retentionHeader, 'dedupd-idempotency-expires'),
    problemBase: o.problemBase || problems.DEFAULT_BASE,
  };
}

/** The middleware: (req, res, next) => void; .wrap(handler) makes a node:http request listener. */
function idempotency(opts) {
  const o = options(opts);
  const middleware = (req, res, next) => {
    serve(o, req, res, next).catch((err) => {
      if (!res.headersSent) problems.write(res, o.problemBase, 'internal', 500, 'Idempotency check failed', String(err && err.message), '');
    });
  };
  middleware.wrap = (handler) => (req, res) => middleware(req, res, (err) => {
    if (err) { problems.write(res, o.problemBase, 'internal', 500, 'Handler failed', String(err.message || err), ''); return; }
    Promise.resolve().then(() => handler(req, res)).catch((e) => {
      if (!res.headersSent) { res.statusCode = 500; res.end(); }
      if (typeof process.emitWarning === 'function') process.emitWarning(`handler failed: ${e && e.message}`);
    });
  });
  return middleware;
}

async function serve(o, req, res, next) {
  delete req.headers[o.fencingHeader]; // only the middleware sets it
  const path = req.url.split('?')[0];
  const n = parts.need(o.rules, req.method, path);
  const value = req.headers[o.keyHeader];
  if (n === 'off' || (n === 'optional' && value === undefined)) { next(); return; }
  const problem = (kind, status, title, detail, key = '', retryAfter = 0) => problems.write(res, o.problemBase, kind, status, title, detail, key, retryAfter);
  if (value === undefined) {
    problem('key-missing', 400, 'Idempotency-Key is missing', `${req.method} ${path} requires an Idempotency-Key header, so that a retry cannot run it twice`);
    return;
  }
  let key;
  try { key = parts.parseKey(value); } catch (err) { problem('key-invalid', 400, 'Idempotency-Key is not valid', err.message); return; }
  let body;
  try { body = await readBody(req, o.maxRequestBytes); } catch (err) {
    if (err.tooLarge) {
      res.setHeader('Connection', 'close');
      problem('request-too-large', 413, 'Request body too large', `a request with an Idempotency-Key may carry at most ${o.maxRequestBytes} bytes`, key);
    } else problem('request-unreadable', 400, 'Request body unreadable', err.message, key);
    return;
  }
  req.rawBody = body;
  if (req.body === undefined) { req.body = body; req._body = true; } // eslint-disable-line no-underscore-dangle
  const recordKey = `${parts.scope(req, o.identityHeader)} ${key}`;
  const run = {};
  let out;
  try {
    out = await doOnce(o.client, o.consumer, recordKey, (token) => runFirst(o, req, res, next, token, run), {
      digest: parts.fingerprint(req, body, o.fingerprintHeaders), leaseTtl: o.leaseTtl, owner: 'httpidem-node',
      maxWait: Math.max(o.wait, 0),
    });
  } catch (err) {
    await answerFailure(o, res, key, recordKey, err, run, problem);
    return;
  }
  sendStored(o, res, out);
}

async function readBody(req, limit) {
  if (Buffer.isBuffer(req.rawBody)) {
    if (req.rawBody.length > limit) throw Object.assign(new Error('too large'), { tooLarge: true });
    return req.rawBody;
  }
  if (Number(req.headers['content-length']) > limit) throw Object.assign(new Error('too large'), { tooLarge: true });
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw Object.assign(new Error('too large'), { tooLarge: true });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Runs the handler behind for the request that holds the key, and decides what its response does to the key. */
async function runFirst(o, req, res, next, token, run) {
  req.headers[o.fencingHeader] = String(token);
  const c = capture(res, o.maxStoredResponseBytes);
  Object.assign(run, { capture: c, token });
  let timer;
  const timedOut = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), o.timeout * 1000); });
  next();
  const ended = await Promise.race([c.done.then(() => 'done'), timedOut]);
  clearTimeout(timer);
  if (ended !== 'timeout') c.restore(); // the handler is done with res: the middleware answers
  if (ended === 'timeout') {
    c.discard = true;
    throw Object.assign(new Error(`the handler did not answer within ${o.timeout}s`), { name: 'TimeoutError' });
  }
  const status = res.statusCode;
  if (c.passed) {
    throw new Terminal(REASON_NOT_STORED, `the first response (status ${status}) was larger than the ${o.maxStoredResponseBytes} bytes this gateway stores, so it went to the first request only`);
  }
  if (status >= 500 && o.on5xx !== 'store') {
    throw Object.assign(new Error(`the handler answered ${status}`), { outcomeUnknown: o.on5xx === 'keep' });
  }
  if (status === 408 || status === 425 || status === 429) throw new Error(`the handler answered ${status}: not processed`);
  return parts.encodeResponse(status, parts.storable(res.getHeaders(), [o.replayedHeader, o.retentionHeader]), c.body());
}

/** Sends a stored response, first or replayed alike, with the key's expiry. */
function sendStored(o, res, out) {
  const stored = parts.decodeResponse(out.result);
  for (const n of res.getHeaderNames()) res.removeHeader(n);
  for (const [n, v] of Object.entries(stored.headers)) res.setHeader(n, v);
  if (out.replayed) res.setHeader(o.replayedHeader, 'true');
  const exp = out.record && out.record.expiresAt;
  if (exp) res.setHeader(o.retentionHeader, new Date(Number(exp.seconds) * 1000).toUTCString());
  res.setHeader('Content-Length', stored.body.length);
  res.statusCode = stored.status;
  res.end(stored.body);
}

async function answerFailure(o, res, key, recordKey, err, run, problem) {
  const c = run.capture;
  if (c) c.restore();
  if (c && c.passed) return; // sent as it came; the key says so to any retry
  if (c && !c.discard) {
    // The handler answered and it is not stored (a 5xx, a status that asks
    // for a retry, or dedupd refusing it): the client gets it as it came.
    if (err instanceof InvalidRequest && err.metadata && err.metadata.field === 'result') {
      await o.client.reject(o.consumer, recordKey, run.token, { reason: REASON_NOT_STORED,
        message: 'the first response was larger than the dedupd consumer\'s max_result_bytes, so it went to the first request only' }).catch(() => {});
    }
    res.setHeader('Content-Length', c.body().length);
    res.end(c.body());
    return;
  }
  if (c && c.discard) { problem('upstream-failed', 504, 'The handler did not answer in time', 'its outcome is unknown; retry with the same key later', key); return; }
  if (err instanceof Rejected) {
    const notStored = err.rejection.reason === REASON_NOT_STORED;
    problem(notStored ? 'response-not-stored' : 'key-rejected', 409,
      notStored ? 'The first response to this key was not stored' : 'This key holds a refusal', err.rejection.message, key);
  } else if (err instanceof DigestMismatch) {
    problem('key-reused', 422, 'Idempotency-Key is already used',
      'this key was first used with another request (method, path, query, Content-Type or body differ); use a new key for a new request', key);
  } else if (err instanceof InProgressTimeout) {
    const lease = err.record && err.record.leaseExpiresAt;
    const left = lease ? Number(lease.seconds) * 1000 - Date.now() : 1000;
    problem('request-in-flight', 409, 'A request is outstanding for this key',
      'the first request with this key is still being processed; retry after Retry-After seconds to get its response', key, Math.max(left, 1000));
  } else if (err instanceof Unavailable) {
    problem('dedupd-unavailable', 503, 'Idempotency store unavailable', 'nothing was sent on; retry with the same key', key, 1000);
  } else {
    problem('internal', 500, 'Idempotency check failed', 'nothing was sent on; retry with the same key', key);
  }
}

module.exports = { idempotency, parseKey: parts.parseKey, parseRule: parts.parseRule, REASON_NOT_STORED };
