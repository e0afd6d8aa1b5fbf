// The console's one way to dedupd: the HTTP API on the same origin
// (POST /dedup.v1.<Service>/<Method>, JSON, docs/http.md). The bearer
// token lives in sessionStorage for this tab only and travels in the
// Authorization header; it is never put in a URL, a cookie or a log.

const TOKEN = 'dedupd.console.token';

export function token() {
  return sessionStorage.getItem(TOKEN) || '';
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN, value);
  else sessionStorage.removeItem(TOKEN);
}

/** An API refusal: the Connect code, the ErrorInfo reason and the message. */
export class ApiError extends Error {
  constructor(status, code, reason, message) {
    super(message);
    this.status = status;
    this.code = code;
    this.reason = reason;
  }
}

function headers() {
  const out = { 'Content-Type': 'application/json' };
  const t = token();
  if (t) out.Authorization = `Bearer ${t}`;
  return out;
}

async function post(path, body) {
  let resp;
  try {
    resp = await fetch(path, {
      method: 'POST', headers: headers(), body: JSON.stringify(body || {}),
      credentials: 'same-origin', cache: 'no-store', referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    throw new ApiError(0, 'unavailable', '', `dedupd did not answer: ${e.message}`);
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : {}; } catch { data = null; }
  if (!resp.ok) {
    const info = data && Array.isArray(data.details)
      ? data.details.find((d) => d.type === 'google.rpc.ErrorInfo') : null;
    throw new ApiError(resp.status, (data && data.code) || `http ${resp.status}`,
      info && info.debug ? info.debug.reason || '' : '',
      (data && data.message) || text.slice(0, 500) || resp.statusText);
  }
  if (data === null) throw new ApiError(resp.status, 'internal', '', 'the reply was not JSON');
  return data;
}

/** call('AdminService', 'Stats', {}) is POST /dedup.v1.AdminService/Stats. */
export function call(service, method, body) {
  return post(`/dedup.v1.${service}/${method}`, body);
}

/** Who the credential is: {auth, identity: {name, consumers, admin}, build}. */
export function session() {
  return post('/console/api/session', {});
}

/** Every page of a listing, up to max items; returns {items, more}. */
export async function collect(service, method, body, field, max) {
  const items = [];
  let pageToken = '';
  for (;;) {
    const page = await call(service, method, { ...body, pageToken });
    items.push(...(page[field] || []));
    pageToken = page.nextPageToken || '';
    if (!pageToken) return { items, more: false };
    if (items.length >= max) return { items, more: true };
  }
}
