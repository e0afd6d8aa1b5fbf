// Console URLs. Every page has one, carrying its filters in the query, so
// a link from an alert opens the same page cold. A key or stream name is
// one path segment, percent-encoded whole (a "/" in a key is %2F); the
// names "." and "..", which URL parsing would fold away, go in the query
// instead (/console/consumers/c/record?key=..).

export const PREFIX = '/console/';

function segment(s) {
  return encodeURIComponent(s);
}

function dotted(s) {
  return s === '.' || s === '..';
}

/** The URL of path segments under /console/ and a query object. */
export function href(segments, query) {
  let url = PREFIX + segments.map(segment).join('/');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '' && v !== false) q.set(k, v === true ? 'true' : String(v));
  }
  const qs = q.toString();
  if (qs) url += `?${qs}`;
  return url;
}

export function consumerHref(consumer, page, query) {
  return href(page ? ['consumers', consumer, page] : ['consumers', consumer], query);
}

export function recordHref(consumer, key) {
  return dotted(key) ? href(['consumers', consumer, 'record'], { key })
    : href(['consumers', consumer, 'records', key]);
}

export function streamHref(consumer, stream) {
  return dotted(stream) ? href(['consumers', consumer, 'stream'], { stream })
    : href(['consumers', consumer, 'streams', stream]);
}

/**
 * The page a location names: {page, consumer, key, stream, query}, page
 * 'notfound' for a path no page has.
 */
export function parse(loc) {
  const query = new URLSearchParams(loc.search);
  let rest = loc.pathname.startsWith(PREFIX) ? loc.pathname.slice(PREFIX.length) : '';
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  let segs;
  try {
    segs = rest === '' ? [] : rest.split('/').map(decodeURIComponent);
  } catch {
    return { page: 'notfound', query };
  }
  const [first, consumer, page, name, ...more] = segs;
  if (more.length > 0) return { page: 'notfound', query };
  if (segs.length === 0) return { page: 'consumers', query };
  if (segs.length === 1 && (first === 'queue' || first === 'stats')) return { page: first, query };
  if (first !== 'consumers' || consumer === undefined) return { page: 'notfound', query };
  if (page === undefined) return { page: 'consumer', consumer, query };
  if (page === 'records' && name === undefined) return { page: 'records', consumer, query };
  if (page === 'records') return { page: 'record', consumer, key: name, query };
  if (page === 'record' && name === undefined && query.has('key')) return { page: 'record', consumer, key: query.get('key'), query };
  if (page === 'streams' && name === undefined) return { page: 'streams', consumer, query };
  if (page === 'streams') return { page: 'stream', consumer, stream: name, query };
  if (page === 'stream' && name === undefined && query.has('stream')) return { page: 'stream', consumer, stream: query.get('stream'), query };
  return { page: 'notfound', query };
}

/** Goes to url inside the app without reloading it. */
export function go(url, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  window.dispatchEvent(new Event('console:navigate'));
}

/**
 * Sends clicks on links to /console/ pages through go, leaving new-tab
 * clicks (modifier keys, middle button) to the browser.
 */
export function captureLinks(root) {
  root.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = e.target.closest('a[href]');
    if (!a || a.target || a.origin !== location.origin || !a.pathname.startsWith(PREFIX)) return;
    // A link within the page (the skip link, #main) moves the focus there
    // as the browser does it; it is no navigation.
    if (a.hash && a.pathname === location.pathname && a.search === location.search) return;
    e.preventDefault();
    go(a.pathname + a.search);
  });
}
