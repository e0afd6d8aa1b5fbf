// Pieces several pages share.
import { call, collect } from '../api.js';
import { h } from '../dom.js';
import { consumerHref, href } from '../router.js';

/** The consumers a credential may look at: every one in Stats for "*". */
export function scopedConsumers(ctx) {
  return ctx.identity.consumers.includes('*') ? null : ctx.identity.consumers.slice().sort();
}

/** A consumer page's heading and its tabs. */
export function consumerHeader(consumer, active) {
  const tabs = [
    ['overview', 'Overview', consumerHref(consumer)],
    ['records', 'Records', consumerHref(consumer, 'records')],
    ['queue', 'Reconciliation queue', href(['queue'], { consumer })],
    ['streams', 'Streams', consumerHref(consumer, 'streams')],
  ];
  return [
    h('p', { class: 'crumbs' }, h('a', { href: '/console/' }, 'Consumers'), ' / ', consumer),
    h('nav', { class: 'tabs', 'aria-label': `Consumer ${consumer}` },
      tabs.map(([id, label, url]) => h('a', { href: url, 'aria-current': id === active ? 'page' : null }, label))),
  ];
}

/** The most records one look at a queue reads, so a page stays small. */
export const QUEUE_SCAN = 1000;

/**
 * The consumer's PENDING records whose lease ran out, oldest lease first,
 * from at most QUEUE_SCAN of them (ListRecords lists in key order):
 * {records, more}.
 */
export async function expiredLeases(consumer) {
  const { items, more } = await collect('DedupService', 'ListRecords',
    { consumer, leaseExpired: true, view: 'RECORD_VIEW_BASIC', pageSize: QUEUE_SCAN }, 'records', QUEUE_SCAN);
  items.sort((a, b) => Date.parse(a.leaseExpiresAt) - Date.parse(b.leaseExpiresAt));
  return { records: items, more };
}

/** Stats for every consumer (admin), keyed by name. */
export async function statsByConsumer(consumer) {
  const resp = await call('AdminService', 'Stats', consumer ? { consumer } : {});
  return new Map((resp.consumers || []).map((s) => [s.consumer, s]));
}

/** A small form that opens a consumer by name. */
export function openConsumerForm(go) {
  const input = h('input', { id: 'open-consumer', name: 'consumer', required: true, spellcheck: 'false' });
  return h('form', { class: 'inline', on: { submit: (e) => { e.preventDefault(); go(consumerHref(input.value.trim())); } } },
    h('label', { for: 'open-consumer' }, 'Open a consumer'), input, h('button', { type: 'submit' }, 'Open'));
}

/**
 * fn over items, at most `limit` calls at once, results in order: a page
 * over many consumers sends the server a few calls at a time, not a burst.
 */
export async function mapLimited(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
