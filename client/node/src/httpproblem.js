'use strict';
// RFC 9457 problem details for the HTTP middleware (http.js): one type URI
// per case, the anchors of docs/gateway.md, as the Go middleware sends.

const DEFAULT_BASE = 'https://github.com/dedupd/dedupd/blob/main/docs/gateway.md#';

/** Answers with a problem; retryAfterMs, when positive, goes in Retry-After (whole seconds, at least 1). */
function write(res, base, kind, status, title, detail, key, retryAfterMs = 0) {
  const doc = { type: base + kind, title, status };
  if (detail) doc.detail = detail;
  if (key) doc.idempotency_key = key; // eslint-disable-line camelcase
  const body = Buffer.from(JSON.stringify(doc));
  for (const n of res.getHeaderNames()) res.removeHeader(n);
  res.setHeader('Content-Type', 'application/problem+json');
  res.setHeader('Content-Length', body.length);
  res.setHeader('Link', `<${base}${kind}>; rel="describedby"; type="text/html"`);
  if (retryAfterMs > 0) res.setHeader('Retry-After', String(Math.ceil(retryAfterMs / 1000)));
  res.statusCode = status;
  res.end(body);
}

module.exports = { write, DEFAULT_BASE };
