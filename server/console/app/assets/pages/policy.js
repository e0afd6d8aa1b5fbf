// Changing a consumer's retention and lease policy, as `dedupctl policy
// set` does: the fields given change, the others keep their stored value;
// a dry run shows every field before and after and what the change
// concerns, then the operator confirms.
import { call } from '../api.js';
import { h, table } from '../dom.js';
import { count, durationText, parseDuration, seconds, size } from '../format.js';
import { confirmAction } from './confirm.js';

const durations = [
  ['completedTtl', 'Keep completed records for'],
  ['rejectedTtl', 'Keep rejected records for'],
  ['releasedTtl', 'Keep released records for'],
  ['defaultLeaseTtl', 'Default lease'],
  ['maxLeaseTtl', 'Longest lease'],
];

/** The policy form, closed behind a button until asked for. */
export function policyEditor(consumer, current, onDone, onError) {
  const stored = current.policy || {};
  const eff = current.effective || {};
  const inputs = {};
  const rows = durations.map(([field, label]) => {
    inputs[field] = h('input', { id: `p-${field}`, name: field, value: stored[field] ? durationText(stored[field]) : '',
      placeholder: `${durationText(eff[field])} (default)`, spellcheck: 'false', inputmode: 'text' });
    return h('div', { class: 'field' }, h('label', { for: `p-${field}` }, label), inputs[field]);
  });
  inputs.maxResultBytes = h('input', { id: 'p-maxResultBytes', name: 'maxResultBytes', type: 'number', min: '0',
    value: stored.maxResultBytes && stored.maxResultBytes !== '0' ? stored.maxResultBytes : '', placeholder: `${eff.maxResultBytes} (default)` });
  inputs.requireDigest = h('input', { id: 'p-requireDigest', name: 'requireDigest', type: 'checkbox', checked: Boolean(eff.requireDigest) });
  const form = h('form', { class: 'policy', hidden: true, on: { submit: async (e) => {
    e.preventDefault();
    try {
      if (await apply(consumer, current, policyFrom(consumer, inputs))) onDone();
    } catch (err) {
      onError(err);
    }
  } } },
  h('p', { class: 'hint' }, 'Durations: 30s, 15m, 72h, 7d, 1h30m. Empty means the server default. Records already stored keep the expiry they have; the new TTLs apply to records that finish from now on.'),
  rows,
  h('div', { class: 'field' }, h('label', { for: 'p-maxResultBytes' }, 'Largest result (bytes)'), inputs.maxResultBytes),
  h('div', { class: 'field check' }, inputs.requireDigest, h('label', { for: 'p-requireDigest' }, 'Refuse claims without a digest')),
  h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Review the change…')));
  const open = h('button', { type: 'button', on: { click: () => { form.hidden = false; open.hidden = true; inputs.completedTtl.focus(); } } },
    'Change the retention policy…');
  return h('div', null, open, form);
}

function policyFrom(consumer, inputs) {
  const policy = { consumer };
  for (const [field] of durations) {
    const v = parseDuration(inputs[field].value);
    if (v) policy[field] = v;
  }
  if (inputs.maxResultBytes.value) policy.maxResultBytes = inputs.maxResultBytes.value;
  policy.requireDigest = inputs.requireDigest.checked;
  return policy;
}

async function apply(consumer, current, policy) {
  const preview = await call('AdminService', 'SetPolicy', { policy, dryRun: true });
  const before = current.effective || {};
  const after = preview.effective || {};
  const rows = [...durations.map(([f, label]) => [label, durationText(before[f]), durationText(after[f])]),
    ['Largest result', size(before.maxResultBytes), size(after.maxResultBytes)],
    ['Digest required', before.requireDigest ? 'yes' : 'no', after.requireDigest ? 'yes' : 'no']]
    .map(([label, b, a]) => [label, b, a, b === a ? '' : h('strong', null, 'changes')]);
  const shortens = (seconds(after.completedTtl) ?? 0) < (seconds(before.completedTtl) ?? 0);
  const warnings = [...(preview.warnings || [])];
  if (shortens && warnings.length === 0) {
    warnings.push(`completed records are kept ${durationText(after.completedTtl)} instead of ${durationText(before.completedTtl)}: a redelivery that arrives after the new TTL runs the work again`);
  }
  return confirmAction({
    title: `Change the policy of ${consumer}?`,
    confirmLabel: shortens ? 'Shorten retention' : 'Set the policy',
    danger: shortens,
    body: [
      table(['Field', 'Now', 'After', ''], rows),
      h('p', null, `${count(preview.storedRecords)} stored records keep the expiry they have; ${count(preview.pendingRecords)} pending claims take the new TTLs when they finish.`),
      warnings.map((w) => h('p', { class: 'warning' }, `Warning: ${w}`)),
    ],
  }).then(async (yes) => {
    if (!yes) return false;
    await call('AdminService', 'SetPolicy', { policy });
    return true;
  });
}
