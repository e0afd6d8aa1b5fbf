// DOM building for the console. Everything a page shows is made here with
// createElement and text nodes: data (keys, results, messages) is never
// parsed as markup, so a key such as <img src=x onerror=...> is text.

/**
 * h('a', {href: '/x', class: 'c'}, 'text', child) builds an element.
 * Attributes are set with setAttribute (never on* handlers: those are
 * passed as functions under `on`: {click: fn}). Children are nodes or
 * strings (made text nodes); null, undefined and false are skipped.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'on') {
      for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    } else if (name.startsWith('on')) {
      throw new Error(`event handler attribute ${name}: pass it under "on"`);
    } else if (value === true) {
      el.setAttribute(name, '');
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces el's children with children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A table: heads are column titles, rows arrays of cells (nodes or text). */
export function table(heads, rows, { caption, className } = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: className || null },
      caption ? h('caption', null, caption) : null,
      h('thead', null, h('tr', null, heads.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, rows.map((cells) => h('tr', null, cells.map((c) => h('td', null, c)))))));
}

/** A definition list of [term, value] pairs, skipping null values. */
export function fields(pairs) {
  return h('dl', { class: 'fields' },
    pairs.filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

/** A short empty-state message. */
export function empty(text) {
  return h('p', { class: 'empty' }, text);
}

/** The error box for an API failure: its code, reason and message. */
export function errorBox(err) {
  const reason = err && err.reason ? ` ${err.reason}` : '';
  const code = err && err.code ? err.code : 'error';
  return h('div', { class: 'error', role: 'alert' },
    h('strong', null, `${code}${reason}`), ': ',
    h('span', null, err && err.message ? err.message : String(err)));
}

/** A state badge: STATE_PENDING shows as "pending". */
export function badge(state) {
  const name = String(state || 'STATE_UNSPECIFIED').replace(/^STATE_/, '').toLowerCase();
  return h('span', { class: `badge ${name}` }, name);
}
