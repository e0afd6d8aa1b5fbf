// One record: every field, the result decoded, and (for admins) delete.
import { call } from '../api.js';
import { h, fields, badge } from '../dom.js';
import { size, when, past } from '../format.js';
import { decode, fromBase64, hex, hexDump } from '../decode.js';
import { consumerHref, go } from '../router.js';
import { consumerHeader } from './common.js';
import { actionButton, confirmAction } from './confirm.js';

export async function recordPage(node, route, ctx) {
  const { consumer, key } = route;
  node.append(...consumerHeader(consumer, 'records'),
    h('h1', null, 'Record ', h('span', { class: 'key' }, key)));
  const { record: r } = await call('DedupService', 'Lookup', { consumer, key });
  const pending = r.state === 'STATE_PENDING';
  const leaseLive = pending && !past(r.leaseExpiresAt);
  node.append(fields([
    ['Consumer', r.consumer],
    ['Key', h('code', { class: 'key' }, r.key)],
    ['State', badge(r.state)],
    ['Fencing token', r.fencingToken],
    ['Attempts', r.attempts],
    ['Owner', r.owner || h('span', { class: 'muted' }, 'none given')],
    ['Digest', r.digest ? h('code', null, hex(fromBase64(r.digest))) : h('span', { class: 'muted' }, 'empty')],
    ['Created', when(r.createdAt)],
    ['Changed', when(r.updatedAt)],
    ['Lease ends', pending ? h('span', null, when(r.leaseExpiresAt), ' ', leaseLive ? h('span', { class: 'badge pending' }, 'live') : h('span', { class: 'badge expired' }, 'expired')) : null],
    ['Forgotten', when(r.expiresAt)],
  ]));
  if (r.state === 'STATE_COMPLETED' || r.result) node.append(h('h2', null, 'Result'), resultView(fromBase64(r.result)));
  if (r.rejection) node.append(h('h2', null, r.rejection.retryable ? 'Released for a retry' : 'Rejection'), rejectionView(r.rejection));
  if (ctx.identity.admin) node.append(h('h2', null, 'Actions'), deleteAction(consumer, r, leaseLive));
}

function rejectionView(rej) {
  return h('div', null, fields([
    ['Reason', rej.reason ? h('code', null, rej.reason) : h('span', { class: 'muted' }, 'none')],
    ['Message', rej.message || h('span', { class: 'muted' }, 'none')],
    ['Retryable', rej.retryable ? 'yes' : 'no'],
  ]), rej.detail ? [h('h3', null, 'Detail'), resultView(fromBase64(rej.detail))] : null);
}

/** A stored body, decoded for reading. */
export function resultView(bytes) {
  return body(decode(bytes));
}

function body(d) {
  const len = h('p', { class: 'muted' }, `Not text: ${d.length} bytes${d.length >= 1024 ? ` (${size(d.length)})` : ''}, as a hex dump.`);
  switch (d.kind) {
    case 'empty': return h('p', { class: 'muted' }, 'Empty (0 bytes).');
    case 'http': return h('div', { class: 'http', 'data-kind': 'http' },
      h('p', { class: 'muted' }, 'An HTTP response stored by dedupd gateway, as it is replayed. ', `${d.length} bytes.`),
      h('pre', { class: 'status-line' }, d.statusLine),
      h('dl', { class: 'headers' }, d.headers.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
      h('h3', null, 'Body'), body(d.body));
    case 'json': return h('div', { 'data-kind': 'json' }, h('p', { class: 'muted' }, `JSON, ${size(d.length)}.`), h('pre', { class: 'json' }, d.text));
    case 'text': return h('div', { 'data-kind': 'text' }, h('p', { class: 'muted' }, `UTF-8 text, ${size(d.length)}.`), h('pre', { class: 'text' }, d.text));
    default: return h('div', { 'data-kind': 'binary' }, len,
      h('pre', { class: 'hex' }, hexDump(d.bytes)),
      d.length > 4096 ? h('p', { class: 'muted' }, `The first 4096 of ${d.length} bytes.`) : null);
  }
}

function deleteAction(consumer, r, leaseLive) {
  return h('div', null,
    h('p', { class: 'hint' }, 'Deleting forgets the key: the next Claim of it runs the work again.'),
    actionButton('Delete this record…', async (status) => {
      const yes = await confirmAction({
        title: `Delete record ${r.key}?`,
        confirmLabel: 'Delete the record',
        body: [
          h('p', null, 'Consumer ', h('strong', null, consumer), ', key ', h('code', { class: 'key' }, r.key), ` (${r.state.replace('STATE_', '').toLowerCase()}, fencing token ${r.fencingToken}) will be forgotten. The next Claim of this key runs the work again.`),
          leaseLive ? h('p', { class: 'warning' }, `Warning: its lease is live (held by ${r.owner || 'an unnamed owner'} until ${new Date(r.leaseExpiresAt).toISOString()}): the holder may still be doing the work, and its Complete will fail with LEASE_LOST.`) : null,
        ],
      });
      if (!yes) return;
      await call('AdminService', 'DeleteRecord', { consumer, key: r.key });
      status.replaceChildren('Deleted.');
      go(consumerHref(consumer, 'records'), { replace: true });
    }));
}
