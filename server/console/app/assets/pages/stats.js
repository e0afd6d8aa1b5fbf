// Stats: the store's counts over every consumer, and the server's build.
import { h, table, fields, empty } from '../dom.js';
import { count } from '../format.js';
import { consumerHref } from '../router.js';
import { statsByConsumer } from './common.js';

const COLUMNS = [
  ['pending', 'Pending'], ['pendingLeaseExpired', 'Lease expired'], ['completed', 'Completed'],
  ['rejected', 'Rejected'], ['released', 'Released'], ['expired', 'Expired'], ['streams', 'Streams'],
  ['streamsInFlight', 'Streams in flight'],
];

export async function statsPage(node, route, ctx) {
  const b = ctx.build || {};
  node.append(h('h1', null, 'Stats'), h('h2', null, 'Server'), fields([
    ['Version', b.version || 'unknown'],
    ['Revision', b.revision ? `${b.revision}${b.modified ? ' (modified checkout)' : ''}` : null],
    ['Commit time', b.time || null],
    ['Go', b.go_version || null],
    ['Authentication', ctx.auth ? 'on' : 'off: every caller is an admin of every consumer'],
  ]));
  node.append(h('h2', null, 'Stored'));
  if (!ctx.identity.admin) {
    node.append(empty('The store’s counts need an admin token.'));
    return;
  }
  const stats = [...(await statsByConsumer()).values()].sort((a, b) => (a.consumer < b.consumer ? -1 : 1));
  if (stats.length === 0) {
    node.append(empty('Nothing stored yet.'));
    return;
  }
  const total = Object.fromEntries(COLUMNS.map(([f]) => [f, stats.reduce((n, s) => n + BigInt(s[f] || 0), 0n)]));
  node.append(table(['Consumer', ...COLUMNS.map(([, t]) => t)], [
    ...stats.map((s) => [h('a', { href: consumerHref(s.consumer) }, s.consumer), ...COLUMNS.map(([f]) => count(s[f]))]),
    [h('strong', null, `All ${stats.length} consumers`), ...COLUMNS.map(([f]) => h('strong', null, count(total[f])))],
  ], { className: 'stats' }));
}
