// The Consumers page and one consumer's overview.
import { call } from '../api.js';
import { h, table, fields, empty, errorBox } from '../dom.js';
import { count, durationText, size, when } from '../format.js';
import { consumerHref, go, href, recordHref } from '../router.js';
import { consumerHeader, expiredLeases, mapLimited, openConsumerForm, scopedConsumers, statsByConsumer } from './common.js';
import { policyEditor } from './policy.js';

const OLDEST_LOOKUPS = 50;

export async function consumersPage(node, route, ctx) {
  node.append(h('h1', null, 'Consumers'));
  if (!ctx.identity.admin) {
    node.append(await scopedList(ctx));
    return;
  }
  const [stats, policies] = await Promise.all([statsByConsumer(), call('AdminService', 'ListPolicies', {})]);
  const stored = new Map((policies.policies || []).map((p) => [p.consumer, p]));
  if (stats.size === 0) {
    node.append(empty('No consumer has stored anything yet.'), openConsumerForm(go));
    return;
  }
  const names = [...stats.keys()].sort();
  // The oldest expired lease needs a listing per consumer: the first
  // OLDEST_LOOKUPS consumers with one get it, the rest their count.
  const queued = names.filter((n) => Number(stats.get(n).pendingLeaseExpired) > 0).slice(0, OLDEST_LOOKUPS);
  const oldest = new Map(await mapLimited(queued, 4, async (n) => [n, await expiredLeases(n).catch((err) => ({ err }))]));
  node.append(
    h('p', { class: 'lede' }, 'Every consumer with stored records or streams. Live counts leave out records past their expiry, counted under “expired”.'),
    table(['Consumer', 'Pending', 'Completed', 'Rejected', 'Released', 'Expired', 'Streams', 'Retention (completed)', 'Oldest pending with an expired lease'],
      names.map((n) => {
        const s = stats.get(n);
        return [
          h('a', { href: consumerHref(n) }, n),
          count(s.pending), count(s.completed), count(s.rejected), count(s.released), count(s.expired),
          count(s.streams),
          retention(stored.get(n), policies.defaults),
          oldestCell(n, s, oldest.get(n)),
        ];
      }), { className: 'consumers' }),
    openConsumerForm(go));
}

function retention(policy, defaults) {
  const own = policy && policy.completedTtl;
  return own ? durationText(own) : h('span', { class: 'muted' }, `${durationText(defaults && defaults.completedTtl)} (default)`);
}

function oldestCell(consumer, s, queue) {
  if (Number(s.pendingLeaseExpired) === 0) return h('span', { class: 'muted' }, 'none');
  if (!queue || queue.err || queue.records.length === 0) return `${count(s.pendingLeaseExpired)} expired`;
  const r = queue.records[0];
  return h('span', null,
    h('a', { href: recordHref(consumer, r.key), class: 'key' }, r.key), ' lease ended ', when(r.leaseExpiresAt, { short: true }), ' · ',
    h('a', { href: href(['queue'], { consumer }) }, `${count(s.pendingLeaseExpired)} in the queue`));
}

async function scopedList(ctx) {
  const names = scopedConsumers(ctx);
  if (!names) {
    return h('div', null, h('p', { class: 'lede' }, 'Your token may act for every consumer, but listing them needs an admin token.'), openConsumerForm(go));
  }
  if (names.length === 0) return empty('Your token covers no consumer.');
  const rows = await mapLimited(names, 4, async (n) => {
    const q = await expiredLeases(n).catch((err) => ({ err }));
    return [h('a', { href: consumerHref(n) }, n),
      q.err ? q.err.message : (q.records.length ? h('a', { href: href(['queue'], { consumer: n }) }, `${q.more ? 'over ' : ''}${q.records.length}`) : 'none')];
  });
  return h('div', null,
    h('p', { class: 'lede' }, 'The consumers your token covers. Counts by state and policies need an admin token.'),
    table(['Consumer', 'Pending with an expired lease'], rows));
}

export async function consumerPage(node, route, ctx) {
  const { consumer } = route;
  node.append(...consumerHeader(consumer, 'overview'), h('h1', null, `Consumer ${consumer}`));
  if (!ctx.identity.admin) {
    node.append(h('p', { class: 'lede' }, 'Records, the reconciliation queue and streams are in the tabs above. Counts and the retention policy need an admin token.'));
    return;
  }
  const [stats, policy] = await Promise.all([statsByConsumer(consumer), call('AdminService', 'GetPolicy', { consumer })]);
  const s = stats.get(consumer);
  node.append(h('h2', null, 'Stored'), s ? fields([
    ['Pending', count(s.pending)],
    ['… with an expired lease', h('a', { href: href(['queue'], { consumer }) }, count(s.pendingLeaseExpired))],
    ['Oldest pending since', when(s.oldestPendingAt)],
    ['Completed', count(s.completed)], ['Rejected', count(s.rejected)], ['Released', count(s.released)],
    ['Expired, not yet reaped', count(s.expired)],
    ['Streams', `${count(s.streams)} (${count(s.streamsInFlight)} in flight, ${count(s.streamsLeaseExpired)} with an expired lease)`],
  ]) : empty('Nothing stored for this consumer.'));
  node.append(h('h2', null, 'Retention and lease policy'), policyTable(policy));
  const editor = h('div', { id: 'policy-editor' });
  node.append(editor);
  editor.append(policyEditor(consumer, policy, () => go(consumerHref(consumer), { replace: true }), (err) => editor.append(errorBox(err))));
}

function policyTable(policy) {
  const eff = policy.effective || {};
  const own = policy.policy;
  const mark = (f) => (own && own[f] && own[f] !== '0' ? '' : ' (default)');
  return fields([
    ['Completed records kept', durationText(eff.completedTtl) + mark('completedTtl')],
    ['Rejected records kept', durationText(eff.rejectedTtl) + mark('rejectedTtl')],
    ['Released records kept', durationText(eff.releasedTtl) + mark('releasedTtl')],
    ['Default lease', durationText(eff.defaultLeaseTtl) + mark('defaultLeaseTtl')],
    ['Longest lease', durationText(eff.maxLeaseTtl) + mark('maxLeaseTtl')],
    ['Largest result', size(eff.maxResultBytes) + mark('maxResultBytes')],
    ['Digest required', eff.requireDigest ? 'yes' : 'no'],
    ['Set', own ? when(own.updatedAt) : 'never (server defaults)'],
  ]);
}
