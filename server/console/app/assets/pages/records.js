// A consumer's records: ListRecords with its filters, each one a query
// parameter, and its keyset paging (page_token in the URL).
import { call } from '../api.js';
import { h, table, empty, badge } from '../dom.js';
import { when } from '../format.js';
import { consumerHref, go, recordHref } from '../router.js';
import { consumerHeader } from './common.js';

const STATES = ['pending', 'completed', 'rejected', 'released'];
const TIMES = [
  ['created_after', 'Created at or after', 'createdAfter'],
  ['created_before', 'Created before', 'createdBefore'],
  ['updated_after', 'Changed at or after', 'updatedAfter'],
  ['updated_before', 'Changed before', 'updatedBefore'],
];

export async function recordsPage(node, route) {
  const { consumer, query } = route;
  const filter = readFilter(query);
  node.append(...consumerHeader(consumer, 'records'), h('h1', null, `Records of ${consumer}`), filterForm(consumer, filter));
  const req = { consumer, pageSize: filter.pageSize, pageToken: filter.pageToken, view: 'RECORD_VIEW_BASIC' };
  if (filter.state) req.states = [`STATE_${filter.state.toUpperCase()}`];
  if (filter.prefix) req.keyPrefix = filter.prefix;
  if (filter.leaseExpired) req.leaseExpired = true;
  for (const [param, , field] of TIMES) if (filter[param]) req[field] = filter[param];
  const page = await call('DedupService', 'ListRecords', req);
  const records = page.records || [];
  if (records.length === 0) {
    node.append(empty(filter.pageToken ? 'No more records.' : 'No record matches these filters.'));
  } else {
    node.append(h('p', { class: 'muted' }, 'In key order (the order ListRecords pages in).'),
      table(['Key', 'State', 'Attempts', 'Fencing token', 'Changed', 'Lease ends', 'Forgotten'],
        records.map((r) => [
          h('a', { href: recordHref(consumer, r.key), class: 'key' }, r.key),
          badge(r.state), r.attempts, r.fencingToken,
          when(r.updatedAt, { short: true }),
          r.state === 'STATE_PENDING' ? when(r.leaseExpiresAt, { short: true }) : h('span', { class: 'muted' }, '—'),
          when(r.expiresAt, { short: true }),
        ]), { className: 'records' }));
  }
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  if (filter.pageToken) pager.append(h('a', { href: pageHref(consumer, filter, '') }, '« First page'));
  if (page.nextPageToken) pager.append(h('a', { href: pageHref(consumer, filter, page.nextPageToken), rel: 'next' }, 'Next page »'));
  node.append(pager);
}

function readFilter(q) {
  const f = {
    state: STATES.includes(q.get('state')) ? q.get('state') : '',
    prefix: q.get('prefix') || '',
    leaseExpired: q.get('lease_expired') === 'true',
    pageToken: q.get('page_token') || '',
    pageSize: Math.min(Math.max(Number(q.get('page_size')) || 50, 1), 1000),
  };
  for (const [param] of TIMES) f[param] = q.get(param) || '';
  return f;
}

function params(filter) {
  const p = { state: filter.state, prefix: filter.prefix, lease_expired: filter.leaseExpired };
  for (const [param] of TIMES) p[param] = filter[param];
  if (filter.pageSize !== 50) p.page_size = filter.pageSize;
  return p;
}

function pageHref(consumer, filter, pageToken) {
  return consumerHref(consumer, 'records', { ...params(filter), page_token: pageToken });
}

// datetime-local inputs speak the browser's local time; the URL and the
// API speak RFC 3339 in UTC.
function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
}

function filterForm(consumer, filter) {
  const state = h('select', { id: 'f-state', name: 'state' },
    h('option', { value: '' }, 'any state'),
    STATES.map((s) => h('option', { value: s, selected: s === filter.state }, s)));
  const prefix = h('input', { id: 'f-prefix', name: 'prefix', value: filter.prefix, spellcheck: 'false', placeholder: 'e.g. charge-' });
  const expired = h('input', { id: 'f-expired', name: 'lease_expired', type: 'checkbox', checked: filter.leaseExpired });
  const times = TIMES.map(([param, label]) => {
    const input = h('input', { id: `f-${param}`, name: param, type: 'datetime-local', step: '1', value: toLocalInput(filter[param]) });
    return [param, input, h('div', { class: 'field' }, h('label', { for: `f-${param}` }, label), input)];
  });
  return h('form', { class: 'filters', role: 'search', on: { submit: (e) => {
    e.preventDefault();
    const next = { state: state.value, prefix: prefix.value, leaseExpired: expired.checked, pageSize: filter.pageSize };
    for (const [param, input] of times) next[param] = input.value ? new Date(input.value).toISOString().replace('.000Z', 'Z') : '';
    go(pageHref(consumer, next, ''));
  } } },
  h('div', { class: 'field' }, h('label', { for: 'f-state' }, 'State'), state),
  h('div', { class: 'field' }, h('label', { for: 'f-prefix' }, 'Key starts with'), prefix),
  h('div', { class: 'field check' }, expired, h('label', { for: 'f-expired' }, 'Pending with an expired lease only')),
  h('details', { class: 'times', open: times.some(([p]) => filter[p]) || null },
    h('summary', null, 'Created or changed in a time range'), times.map(([, , field]) => field)),
  h('div', { class: 'buttons' },
    h('button', { type: 'submit', class: 'primary' }, 'Filter'),
    h('a', { href: consumerHref(consumer, 'records') }, 'Clear')));
}
