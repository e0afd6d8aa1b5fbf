'use strict';
// The consumer under kill -9 against a real RabbitMQ and a real dedupd.
// 300 events with stable ids (plus 30 duplicate messages; EVENTS sets the
// number, and the run without settle takes at most 100) go to a fresh
// queue; three consumers charge a fake gateway that is not idempotent; the
// test kill -9s a consumer after the claim, after the charge, after
// Complete (before the ack), and during settle, and cuts connections
// without acking, restarting consumers until every message is acked.
// Oracle: the gateway's own count of charges per event id.
//
// With settle every event is charged exactly once, every record is
// COMPLETED with that charge's id, and nothing is left PENDING. Without
// settle the same kills after the charge must charge some events twice:
// the proof that the test can fail.
//
// AMQP_URL names the broker (default amqp://guest:guest@127.0.0.1:5672);
// DEDUPD_BIN a built dedupd, else one is built from this repository.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after, before, describe, it } = require('node:test');

const amqp = require('amqplib');
const dedupd = require('@dedupd/client');
const { startServer } = require('../../../client/node/testing/server');
const { messages, startHarness, supervise } = require('../harness/harness');

const AMQP_URL = process.env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672';
const EVENTS = Number(process.env.EVENTS || 300);
// The run without settle only has to show the double charges; fewer events keep it short.
const EVENTS_WITHOUT_SETTLE = Math.min(EVENTS, 100);
const CONSUMERS = 3;
const REPO = path.resolve(__dirname, '..', '..', '..');

/**
 * The crash plan: `${eventId}:${point}` -> 'kill' or 'drop', over events
 * spread through the run. Two of the events killed after their charge are
 * killed again in the settle that follows.
 */
function crashPlan(events) {
  const points = ['claimed', 'charged', 'completed', 'drop:claimed', 'drop:charged', 'drop:completed'];
  const plan = new Map();
  const charged = [];
  for (let k = 0; k < 18; k++) {
    const event = events[Math.floor(((k + 0.5) * events.length) / 18)];
    const point = points[k % points.length];
    const [action, at] = point.startsWith('drop:') ? ['drop', point.slice(5)] : ['kill', point];
    plan.set(`${event.id}:${at}`, action);
    if (at === 'charged' && action === 'kill') charged.push(event.id);
  }
  for (const id of charged.slice(0, 2)) plan.set(`${id}:settled`, 'kill');
  return { plan, killedAfterCharge: charged.length };
}

/** Publishes the messages to a fresh queue (it expires 10 minutes after its last use) and returns its name. */
async function publish(conn, msgs) {
  const queue = `dedupd-node-example-${crypto.randomUUID()}`;
  const ch = await conn.createConfirmChannel();
  await ch.assertQueue(queue, { durable: false, arguments: { 'x-expires': 600000 } });
  for (const { messageId, event } of msgs) {
    ch.sendToQueue(queue, Buffer.from(JSON.stringify(event)), { messageId, contentType: 'application/json' });
  }
  await ch.waitForConfirms();
  await ch.close();
  return queue;
}

/** Whether every event has a COMPLETED record. */
async function allCompleted(client, events) {
  return [...(await records(client, events)).values()].every((r) => r && r.state === 'STATE_COMPLETED');
}

/**
 * Runs the consumers until every event is completed and every message
 * acked (the queue is empty once they stopped); returns the figures.
 */
async function runConsumers({ settle, count, client, dedupdAddr, conn }) {
  const { events, messages: msgs } = messages(count);
  const { plan, killedAfterCharge } = crashPlan(events);
  const harness = await startHarness(plan);
  const queue = await publish(conn, msgs);
  const env = {
    AMQP_URL, QUEUE: queue, DEDUPD_ADDR: dedupdAddr, GATEWAY_URL: harness.url,
    PROBE_URL: `${harness.url}/probe`, SETTLE: settle ? '1' : '0', PLAN: JSON.stringify([...plan.keys()]),
  };
  const fleet = supervise(CONSUMERS, env);
  const ch = await conn.createChannel();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  while ((await ch.checkQueue(queue)).messageCount > 0 || !(await allCompleted(client, events))) await sleep(500);
  // Stopping lets the messages in hand finish and ack. A consumer killed
  // right after an ack may have lost it, and a nacked message is back in
  // the queue: one more consumer acks those (replays).
  await fleet.stop();
  let rounds = 0;
  while ((await ch.checkQueue(queue)).messageCount > 0) {
    assert.ok(++rounds <= 5, 'the queue did not drain');
    const drain = supervise(1, env);
    while ((await ch.checkQueue(queue)).messageCount > 0) await sleep(200);
    await drain.stop();
  }
  await ch.deleteQueue(queue);
  await ch.close();
  await harness.close();
  const { figures } = harness;
  const stored = await records(client, events);
  return {
    events, plan, killedAfterCharge, charges: harness.charges, fired: harness.fired, records: stored,
    figures: {
      events: events.length, messages: msgs.length, kills: figures.kills, drops: figures.drops,
      consumersStarted: fleet.counts.started,
      // acquisitions after the first, as dedupd counted them
      takeovers: [...stored.values()].reduce((n, r) => n + Number(r.attempts) - 1, 0),
      settleHits: figures.lookupHits,
      doubleEffects: events.filter((e) => (harness.charges.get(e.id) || []).length > 1).length,
    },
  };
}

/** Every record of the events, read back from dedupd. */
async function records(client, events) {
  const out = new Map();
  for (let i = 0; i < events.length; i += 100) {
    const ids = events.slice(i, i + 100).map((e) => e.id);
    (await client.lookupBatch('payments', ids)).forEach((r, j) => out.set(ids[j], r.value));
  }
  return out;
}

describe('consumer on RabbitMQ under kill -9', { timeout: 10 * 60 * 1000 }, () => {
  let dir;
  let conn;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dedupd-rmq-'));
    if (!process.env.DEDUPD_BIN) {
      execFileSync('go', ['build', '-o', path.join(dir, 'dedupd'), './cmd/dedupd'], { cwd: REPO, stdio: 'inherit' });
      process.env.DEDUPD_BIN = path.join(dir, 'dedupd');
    }
    conn = await amqp.connect(AMQP_URL);
  });
  after(async () => {
    if (conn) await conn.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** One run on its own dedupd: the figures, and the records it left. */
  async function run(settle, count, t) {
    const server = await startServer();
    const client = new dedupd.Client(server.addr);
    try {
      const started = Date.now();
      const out = await runConsumers({ settle, count, client, dedupdAddr: server.addr, conn });
      out.figures.seconds = Math.round((Date.now() - started) / 1000);
      out.pending = (await client.listRecords('payments', { states: ['STATE_PENDING'], pageSize: 1000 })).records;
      const line = `${settle ? 'with' : 'without'} settle: ${JSON.stringify(out.figures)}`;
      t.diagnostic(line);
      console.log(line);
      return out;
    } finally {
      client.close();
      await server.stop();
    }
  }

  it('with settle: every event charged exactly once, every record COMPLETED with its charge', async (t) => {
    const out = await run(true, EVENTS, t);
    // Each kind of crash happened (a planned one can be pre-empted: a kill
    // meant for another event may take this one down first).
    const kind = (entry) => `${out.plan.get(entry)}@${entry.split(':')[1]}`;
    const planned = new Set([...out.plan.keys()].map(kind));
    assert.deepEqual(new Set([...out.fired].map(kind)), planned);
    for (const event of out.events) {
      const made = out.charges.get(event.id) || [];
      assert.equal(made.length, 1, `${event.id} was charged ${made.length} times: ${made}`);
      const record = out.records.get(event.id);
      assert.equal(record.state, 'STATE_COMPLETED', event.id);
      assert.equal(record.result.toString(), made[0], `${event.id}'s record holds its charge`);
    }
    assert.deepEqual(out.pending, []);
    assert.equal(out.figures.doubleEffects, 0);
    assert.ok(out.figures.settleHits >= out.killedAfterCharge, 'each kill after a charge was settled, not charged again');
  });

  it('without settle: the kills after the charge charge events twice', async (t) => {
    const out = await run(false, EVENTS_WITHOUT_SETTLE, t);
    assert.ok(out.figures.doubleEffects >= 1, 'no event was charged twice: the test could not fail');
    assert.ok(out.figures.doubleEffects >= out.killedAfterCharge, `${out.figures.doubleEffects} < ${out.killedAfterCharge}`);
    assert.equal(out.figures.settleHits, 0);
    assert.deepEqual(out.pending, []);
  });
});
