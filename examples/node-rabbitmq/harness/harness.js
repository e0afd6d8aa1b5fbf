'use strict';
// The pieces of the crash test: a fake payment gateway that is not
// idempotent (every POST /charges is a new charge) and offers a lookup by
// event id, the probe endpoint the probed consumers ask at the crash points
// the plan names (answered "go", "drop", or by kill -9 of the asking
// process), a supervisor that restarts consumers until stopped, and the
// events.

const { spawn } = require('node:child_process');
const http = require('node:http');
const path = require('node:path');

/**
 * Starts the HTTP server for the gateway and the probe. plan maps
 * `${eventId}:${point}` to 'kill' or 'drop'; each entry fires once, at the
 * first time a consumer reaches that point for that event.
 */
async function startHarness(plan) {
  const charges = new Map(); // event id -> [charge id, ...]
  const fired = new Set();
  const figures = { kills: 0, drops: 0, lookups: 0, lookupHits: 0 };
  let nextCharge = 0;

  const server = http.createServer(async (req, res) => {
    const body = await readJSON(req);
    const url = new URL(req.url, 'http://gateway');
    const reply = (status, value) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'POST' && url.pathname === '/charges') {
      const id = `ch_${++nextCharge}`;
      charges.set(body.event_id, [...(charges.get(body.event_id) || []), id]);
      return reply(201, { id });
    }
    if (req.method === 'GET' && url.pathname === '/charges') {
      const made = charges.get(url.searchParams.get('event_id'));
      figures.lookups += 1;
      if (made) figures.lookupHits += 1;
      return made ? reply(200, { id: made[0] }) : reply(404, { error: 'no such charge' });
    }
    if (req.method === 'POST' && url.pathname === '/probe') {
      const { pid, point, eventId } = body;
      const entry = `${eventId}:${point}`;
      if (plan.has(entry) && !fired.has(entry)) {
        fired.add(entry);
        if (plan.get(entry) === 'kill') {
          figures.kills += 1;
          process.kill(pid, 'SIGKILL');
          return res.destroy();
        }
        figures.drops += 1;
        return reply(200, { action: 'drop' });
      }
      return reply(200, { action: 'go' });
    }
    return reply(404, {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    charges,
    fired,
    figures,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

async function readJSON(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {};
}

/**
 * Keeps `slots` probed consumers running with env, starting a new one
 * whenever one exits, until stop() ends them gracefully (SIGTERM) and
 * resolves once all have exited.
 */
function supervise(slots, env) {
  const children = new Set();
  const counts = { started: 0 };
  let stopping = false;
  const start = () => {
    counts.started += 1;
    const child = spawn(process.execPath, [path.join(__dirname, 'probed-consumer.js')], {
      env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.exited = new Promise((resolve) => child.once('exit', resolve)).then(() => {
      children.delete(child);
      if (!stopping) start();
    });
    children.add(child);
  };
  for (let i = 0; i < slots; i++) start();
  return {
    counts,
    async stop() {
      stopping = true;
      const all = [...children];
      for (const child of all) child.kill('SIGTERM');
      // A consumer that does not stop in time is killed, as a process
      // supervisor would: one more crash, which the test must survive too.
      const late = setTimeout(() => { for (const child of all) child.kill('SIGKILL'); }, 60_000);
      await Promise.all(all.map((child) => child.exited));
      clearTimeout(late);
    },
  };
}

/**
 * The events and the messages that carry them: n events with stable ids,
 * and a duplicate of every tenth one published a few messages later, as a
 * producer that retried its publish would.
 */
function messages(n) {
  const events = Array.from({ length: n }, (_, i) => ({ id: `evt-${String(i).padStart(4, '0')}`, amount: 100 + i }));
  const out = [];
  events.forEach((event, i) => {
    out.push({ messageId: `${event.id}/1`, event });
    if (i >= 3 && (i - 3) % 10 === 0) out.push({ messageId: `${events[i - 3].id}/2`, event: events[i - 3] });
  });
  return { events, messages: out };
}

module.exports = { startHarness, supervise, messages };
