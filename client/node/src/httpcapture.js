'use strict';
// Holds the response a handler writes behind the HTTP middleware (http.js)
// until the handler ends, so that it can be stored before the client sees
// it; a response that grows past the limit goes on to the client from then
// on, as it comes, and is not stored. It replaces res.writeHead, res.write
// and res.end on the one response object, and restore() puts them back.

function toBuffer(chunk, encoding) {
  if (chunk === undefined || chunk === null) return Buffer.alloc(0);
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8');
}

function capture(res, limit) {
  const own = ['writeHead', 'write', 'end'];
  const orig = Object.fromEntries(own.map((m) => [m, res[m]]));
  let finish;
  const state = {
    chunks: [], size: 0, passed: false, discard: false,
    done: new Promise((resolve) => { finish = resolve; }),
    body: () => Buffer.concat(state.chunks),
    restore: () => { for (const m of own) delete res[m]; },
  };
  const passThrough = () => {
    state.passed = true;
    orig.writeHead.call(res, res.statusCode);
    for (const c of state.chunks) orig.write.call(res, c);
    state.chunks = [];
  };
  res.writeHead = function writeHead(status, reason, headers) {
    const h = typeof reason === 'object' && reason !== null ? reason : headers;
    if (status >= 200) res.statusCode = status;
    if (Array.isArray(h)) {
      for (let i = 0; i + 1 < h.length; i += 2) res.setHeader(h[i], h[i + 1]);
    } else if (h) {
      for (const [n, v] of Object.entries(h)) res.setHeader(n, v);
    }
    return res;
  };
  res.write = function write(chunk, encoding, cb) {
    const callback = typeof encoding === 'function' ? encoding : cb;
    if (state.discard) return true;
    const b = toBuffer(chunk, encoding);
    if (!state.passed && state.size + b.length > limit) passThrough();
    if (state.passed) return orig.write.call(res, b, callback);
    state.chunks.push(b);
    state.size += b.length;
    if (callback) process.nextTick(callback);
    return true;
  };
  res.end = function end(chunk, encoding, cb) {
    const callback = [chunk, encoding, cb].find((a) => typeof a === 'function');
    if (typeof chunk !== 'function' && chunk !== undefined && chunk !== null) res.write(chunk, typeof encoding === 'function' ? undefined : encoding);
    if (state.passed && !state.discard) orig.end.call(res, callback);
    else if (callback) process.nextTick(callback);
    finish();
    return res;
  };
  return state;
}

module.exports = { capture };
