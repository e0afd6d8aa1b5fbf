// The reconciliation queue: PENDING records whose lease ran out, whose
// side effect may or may not have happened, oldest lease first, per
// consumer. An operator settles each (finds out, then completes it
// through the owner, or deletes it so the work runs again).
import { h, table, empty, errorBox } from '../dom.js';
import { count, when } from '../format.js';
import { consumerHref, href, recordHref } from '../router.js';
import { QUEUE_SCAN, consumerHeader, expiredLeases, mapLimited, scopedConsumers, statsByConsumer } from './common.js';

export async function queuePage(node, route, ctx) {
  const only = route.query.get('consumer');
  if (only) node.append(...consumerHeader(only, 'queue'));
  node.append(h('h1', null, only ? `Reconciliation queue of ${only}` : 'Reconciliation queue'),
    h('p', { class: 'lede' }, 'Pending records whose lease ran out: their work may or may not have happened. Oldest lease first. ',
      'Settle each one: check the side effect, then let its owner finish it, or delete the record so the next Claim runs the work again.'));
  let names;
  if (only) names = [only];
  else if (ctx.identity.admin) {
    const stats = await statsByConsumer();
    names = [...stats.values()].filter((s) => Number(s.pendingLeaseExpired) > 0).map((s) => s.consumer).sort();
  } else {
    names = scopedConsumers(ctx) || [];
    if (names.length === 0) {
      node.append(empty('Open a consumer to see its queue: listing every consumer needs an admin token.'));
      return;
    }
  }
  const queues = await mapLimited(names, 4, async (n) => [n, await expiredLeases(n).catch((err) => ({ err }))]);
  const nonEmpty = queues.filter(([, q]) => q.err || q.records.length > 0);
  if (nonEmpty.length === 0) {
    node.append(empty(only ? `${only} has no pending record with an expired lease.` : 'No pending record has an expired lease. Nothing to settle.'));
    return;
  }
  for (const [consumer, q] of nonEmpty) {
    const section = h('section', { class: 'queue', 'aria-label': `Queue of ${consumer}` },
      h('h2', null, only ? `${count(q.records ? q.records.length : 0)} to settle` : h('a', { href: consumerHref(consumer) }, consumer)));
    if (q.err) {
      section.append(errorBox(q.err));
    } else {
      section.append(table(['Key', 'Lease ended', 'Owner', 'Attempts', 'Fencing token', 'Created'],
        q.records.map((r) => [
          h('a', { href: recordHref(consumer, r.key), class: 'key' }, r.key),
          when(r.leaseExpiresAt, { short: true }), r.owner || h('span', { class: 'muted' }, '—'),
          r.attempts, r.fencingToken, when(r.createdAt, { short: true }),
        ]), { className: 'queue' }));
      if (q.more) section.append(h('p', { class: 'muted' }, `More than ${QUEUE_SCAN}: these are the oldest of the first ${QUEUE_SCAN} by key. `,
        h('a', { href: consumerHref(consumer, 'records', { lease_expired: true }) }, 'Page through all of them')));
    }
    node.append(section);
  }
  if (!only) node.append(h('p', null, h('a', { href: href(['queue']) }, 'Refresh')));
}
