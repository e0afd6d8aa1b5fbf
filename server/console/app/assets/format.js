// How the console writes times, durations and sizes.
import { h } from './dom.js';

/** "in 23 s" or "4 min ago", from a difference in milliseconds. */
export function relative(ms) {
  const future = ms > 0;
  const s = Math.abs(ms) / 1000;
  let text;
  if (s < 1) return 'now';
  if (s < 90) text = `${Math.round(s)} s`;
  else if (s < 90 * 60) text = `${Math.round(s / 60)} min`;
  else if (s < 36 * 3600) text = `${Math.round(s / 3600)} h`;
  else text = `${Math.round(s / 86400)} d`;
  return future ? `in ${text}` : `${text} ago`;
}

/** A timestamp as "2026-12-07 09:14:03 UTC (4 min ago)"; "—" when unset. */
export function when(ts, { short = false } = {}) {
  if (!ts) return h('span', { class: 'muted' }, '—');
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts);
  const date = d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC').replace(/Z$/, ' UTC');
  const rel = relative(d.getTime() - Date.now());
  return h('time', { datetime: ts, title: date },
    short ? rel : `${date} (${rel})`);
}

/** Whether a timestamp is in the past. */
export function past(ts) {
  return Boolean(ts) && new Date(ts).getTime() <= Date.now();
}

/** Seconds of a protobuf JSON duration ("86400s", "1.5s"); null when unset. */
export function seconds(duration) {
  if (!duration) return null;
  const n = Number(String(duration).replace(/s$/, ''));
  return Number.isFinite(n) ? n : null;
}

/** A duration for people: "7d", "1h30m", "45s", "0s". */
export function durationText(duration) {
  const total = seconds(duration);
  if (total === null) return 'default';
  if (total === 0) return '0s';
  let rest = total;
  let out = '';
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['m', 60]]) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  if (rest > 0 || out === '') out += `${Number(rest.toFixed(3))}s`;
  return out;
}

/**
 * Parses "7d", "72h", "1h30m", "90s", "250ms" into a protobuf JSON
 * duration ("604800s"); "" or "0" is null (the server default). Throws on
 * anything else, naming the input.
 */
export function parseDuration(text) {
  const s = String(text).trim();
  if (s === '' || s === '0') return null;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  const size = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  let total = 0;
  let end = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * size[m[2]];
    end = re.lastIndex;
  }
  if (end !== s.length) throw new Error(`"${s}" is not a duration: write it as 30s, 15m, 72h, 7d or 1h30m`);
  return `${Number(total.toFixed(3))}s`;
}

/** A byte count: "512 B", "1.5 KiB", "3.0 MiB". */
export function size(n) {
  const v = Number(n || 0);
  if (v < 1024) return `${v} B`;
  if (v < 1024 * 1024) return `${(v / 1024).toFixed(1)} KiB`;
  return `${(v / 1024 / 1024).toFixed(1)} MiB`;
}

/** An int64 as the API sends it (a string), with thousands separators. */
export function count(n) {
  const s = String(n ?? '0');
  return s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
