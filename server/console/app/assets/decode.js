// Decoding a stored result for people: an HTTP response stored by
// `dedupd gateway` (an HTTP/1.1 response message), JSON pretty-printed,
// UTF-8 text as text, anything else as a hex dump.

/** The bytes of a base64 string (the JSON form of a bytes field). */
export function fromBase64(b64) {
  const bin = atob(b64 || '');
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function utf8(bytes) {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/**
 * What bytes hold: {kind: 'empty'} | {kind: 'http', statusLine, headers:
 * [[name, value]], body: <decoded>} | {kind: 'json', text} | {kind:
 * 'text', text} | {kind: 'binary', bytes}. Every kind has length.
 */
export function decode(bytes, { http = true } = {}) {
  const length = bytes.length;
  if (length === 0) return { kind: 'empty', length };
  if (http) {
    const response = httpResponse(bytes);
    if (response) return { ...response, length };
  }
  const text = utf8(bytes);
  if (text === null) return { kind: 'binary', bytes, length };
  const json = prettyJSON(text);
  if (json !== null) return { kind: 'json', text: json, length };
  return { kind: 'text', text, length };
}

/** An HTTP/1.x response message split into status line, headers and body. */
function httpResponse(bytes) {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, Math.min(bytes.length, 64 * 1024)));
  if (!/^HTTP\/1\.[01] \d{3}/.test(head)) return null;
  const end = head.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = head.slice(0, end).split('\r\n');
  const headers = [];
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) return null;
    headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  // Header values are bytes; read them as UTF-8 when they are.
  const heads = headers.map(([k, v]) => [k, utf8(Uint8Array.from(v, (c) => c.charCodeAt(0))) ?? v]);
  return { kind: 'http', statusLine, headers: heads, body: decode(bytes.subarray(end + 4), { http: false }) };
}

/**
 * text re-indented when it is a JSON object or array; null otherwise. It
 * re-spaces the original tokens rather than printing a parsed value, so
 * numbers beyond 2^53 and the order of keys stay as stored.
 */
export function prettyJSON(text) {
  const trimmed = text.trim();
  if (!/^[[{]/.test(trimmed)) return null;
  try { JSON.parse(trimmed); } catch { return null; }
  let out = '';
  let depth = 0;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < trimmed.length; i++) {
    const c = trimmed[i];
    if (c === '"') {
      let j = i + 1;
      while (trimmed[j] !== '"') j += trimmed[j] === '\\' ? 2 : 1;
      out += trimmed.slice(i, j + 1);
      i = j;
    } else if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      let k = i + 1;
      while (/\s/.test(trimmed[k])) k++;
      if (trimmed[k] === close) { out += c + close; i = k; continue; }
      depth++;
      out += c + newline();
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') {
      out += `,${newline()}`;
    } else if (c === ':') {
      out += ': ';
    } else if (!/\s/.test(c)) {
      out += c;
    }
  }
  return out;
}

/** Lines of a hex dump: offset, 16 bytes in hex, and their ASCII. */
export function hexDump(bytes, limit = 4096) {
  const lines = [];
  const n = Math.min(bytes.length, limit);
  for (let off = 0; off < n; off += 16) {
    const row = bytes.subarray(off, Math.min(off + 16, n));
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${off.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  |${ascii}|`);
  }
  return lines.join('\n');
}

/** bytes as hex, "q83vEjQ=" as "abcdef1234". */
export function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
