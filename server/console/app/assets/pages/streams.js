// A consumer's streams (high-water mark, lease, open gap, parked events)
// and one stream, with the admin's skip-gap and drop-parked actions.
import { call } from '../api.js';
import { h, table, fields, empty } from '../dom.js';
import { count, size, when, past, relative } from '../format.js';
import { consumerHref, go, streamHref } from '../router.js';
import { consumerHeader, mapLimited } from './common.js';
import { actionButton, confirmAction } from './confirm.js';

const mode = (m) => String(m || '').replace('STREAM_MODE_', '').toLowerCase() || 'unset';

export async function streamsPage(node, route) {
  const { consumer, query } = route;
  const pageToken = query.get('page_token') || '';
  node.append(...consumerHeader(consumer, 'streams'), h('h1', null, `Streams of ${consumer}`));
  const page = await call('StreamService', 'ListStreams', { consumer, pageSize: 100, pageToken });
  const streams = page.streams || [];
  if (streams.length === 0) {
    node.append(empty(pageToken ? 'No more streams.' : `${consumer} has no stream.`));
    return;
  }
  // The gap is in GetStream's parked summary; only a stream with parked
  // events can have one.
  const gaps = new Map(await mapLimited(streams.filter((s) => Number(s.parked) > 0), 4,
    async (s) => [s.stream, await call('StreamService', 'GetStream', { consumer, stream: s.stream }).catch(() => null)]));
  node.append(table(['Stream', 'Mode', 'High-water mark', 'In flight', 'Lease ends', 'Gap', 'Parked', 'Skipped', 'Changed'],
    streams.map((s) => {
      const g = gaps.get(s.stream);
      const sum = g && g.parked;
      return [
        h('a', { href: streamHref(consumer, s.stream), class: 'key' }, s.stream), mode(s.mode), count(s.highWater),
        Number(s.inFlight) ? count(s.inFlight) : h('span', { class: 'muted' }, '—'),
        Number(s.inFlight) ? when(s.leaseExpiresAt, { short: true }) : h('span', { class: 'muted' }, '—'),
        sum && sum.gapOpen ? h('span', { class: 'badge expired' }, `open before ${count(sum.lowest)}`) : h('span', { class: 'muted' }, 'none'),
        Number(s.parked) ? `${count(s.parked)} (${size(s.parkedBytes)})` : h('span', { class: 'muted' }, '0'),
        count(s.skipped), when(s.updatedAt, { short: true }),
      ];
    }), { className: 'streams' }));
  if (page.nextPageToken) {
    node.append(h('nav', { class: 'pager' }, h('a', { href: consumerHref(consumer, 'streams', { page_token: page.nextPageToken }), rel: 'next' }, 'Next page »')));
  }
}

export async function streamPage(node, route, ctx) {
  const { consumer, stream } = route;
  node.append(...consumerHeader(consumer, 'streams'), h('h1', null, 'Stream ', h('span', { class: 'key' }, stream)));
  const [got, parked] = await Promise.all([
    call('StreamService', 'GetStream', { consumer, stream }),
    call('StreamService', 'ListParked', { consumer, stream, pageSize: 1000 }),
  ]);
  const s = got.stream;
  const sum = got.parked;
  const inFlight = Number(s.inFlight) > 0;
  node.append(fields([
    ['Mode', mode(s.mode)],
    ['High-water mark', count(s.highWater)],
    ['Last outcome', s.lastOutcome && s.lastOutcome !== 'STATE_UNSPECIFIED' ? s.lastOutcome.replace('STATE_', '').toLowerCase() : null],
    ['Last rejection', s.lastRejection ? `${s.lastRejection.reason}: ${s.lastRejection.message}` : null],
    ['In flight', inFlight ? `sequence ${count(s.inFlight)}, fencing token ${s.fencingToken}, owner ${s.owner || 'unnamed'}` : 'nothing'],
    ['Lease ends', inFlight ? h('span', null, when(s.leaseExpiresAt), past(s.leaseExpiresAt) ? ' (expired)' : '') : null],
    ['Gap', sum && sum.gapOpen ? `open: sequence ${count(Number(s.highWater) + 1)} is missing, ${count(sum.lowest)} and after wait for it` : 'none'],
    ['Poison events skipped', count(s.rejected)],
    ['Sequences skipped', s.lastSkipped ? `${count(s.skipped)}; last ${s.lastSkipped.fromSequence}–${s.lastSkipped.toSequence} (${String(s.lastSkipped.cause).replace('SKIP_CAUSE_', '').toLowerCase().replace('_', ' ')}) ` : count(s.skipped)],
    ['Created', when(s.createdAt)], ['Changed', when(s.updatedAt)], ['Forgotten', when(s.expiresAt)],
  ]));
  const events = parked.events || [];
  node.append(h('h2', null, `Parked events (${count(s.parked)}, ${size(s.parkedBytes)})`));
  if (events.length === 0) node.append(empty('No parked event.'));
  else {
    node.append(table(['Sequence', 'Size', 'Parked', 'Handed out', ''], events.map((e) => [
      count(e.sequence), size(e.payloadBytes), h('span', { title: e.parkedAt }, relative(Date.parse(e.parkedAt) - Date.now())),
      e.inFlight ? `yes, lease ${relative(Date.parse(e.leaseExpiresAt) - Date.now())}` : 'no',
      ctx.identity.admin ? dropAction(consumer, stream, e) : '',
    ]), { className: 'parked' }));
    if (parked.nextPageToken) node.append(h('p', { class: 'muted' }, 'The first 1000 shown.'));
  }
  if (ctx.identity.admin && sum && sum.gapOpen) node.append(h('h2', null, 'Actions'), skipAction(consumer, stream, s));
}

function reload(consumer, stream) {
  go(streamHref(consumer, stream), { replace: true });
}

function skipAction(consumer, stream, s) {
  return actionButton('Skip the gap…', async () => {
    const preview = await call('StreamAdminService', 'SkipGap', { consumer, stream, dryRun: true });
    const r = preview.skipped || {};
    const yes = await confirmAction({
      title: `Skip the gap of stream ${stream}?`,
      confirmLabel: 'Skip the gap',
      body: [h('p', null, `Sequences ${r.fromSequence}–${r.toSequence} of stream `, h('code', { class: 'key' }, stream), ` (consumer ${consumer}) are given up: the mark moves from ${s.highWater} to ${preview.stream.highWater}, and the parked events after them become ready in order.`),
        h('p', { class: 'warning' }, 'A skipped event delivered later is a duplicate and is never processed.')],
    });
    if (!yes) return;
    await call('StreamAdminService', 'SkipGap', { consumer, stream });
    reload(consumer, stream);
  });
}

function dropAction(consumer, stream, e) {
  return actionButton('Drop…', async () => {
    const yes = await confirmAction({
      title: `Drop parked event ${e.sequence}?`,
      confirmLabel: 'Drop the event',
      body: [h('p', null, `The parked event ${e.sequence} of stream `, h('code', { class: 'key' }, stream), ` (consumer ${consumer}, ${size(e.payloadBytes)}) is deleted with its payload; its sequence counts as never delivered, so a redelivery is parked or claimed again.`),
        e.inFlight ? h('p', { class: 'warning' }, 'It is handed out: its holder can still finish it.') : null],
    });
    if (!yes) return;
    await call('StreamAdminService', 'DropParked', { consumer, stream, fromSequence: e.sequence, toSequence: e.sequence });
    reload(consumer, stream);
  });
}
