'use strict';
// A RabbitMQ consumer that charges a payment gateway once per event, with
// dedupd's do() and a settle hook, as client/node/README.md describes.
//
// RabbitMQ redelivers an unacked message the moment its consumer's channel
// closes. If the consumer died after the charge and before Complete, the
// next consumer waits out the lease, takes the key over, and would charge
// again. settle runs first on such a takeover (attempt above 1) and asks
// the gateway whether this event was charged: if so, that charge is
// recorded and fn does not run.
//
// Outcomes and what happens to the message (docs/guarantees.md):
//   completed, settled or replayed  ack
//   Rejected, DigestMismatch         nack without requeue (dead-letter)
//   anything else                    nack with requeue: the outcome is
//     unknown or retryable (settle or fn failed, lease lost, in progress)
//
// Run: AMQP_URL=amqp://guest:guest@127.0.0.1:5672 QUEUE=payments \
//   DEDUPD_ADDR=127.0.0.1:7070 GATEWAY_URL=http://127.0.0.1:8080 node consumer.js
// SETTLE=0 turns settle off (the crash test shows the double charges then).
// When the connection drops the process exits, and its supervisor restarts it.

const amqp = require('amqplib');
const dedupd = require('@dedupd/client');

const CONSUMER = 'payments';

/** The payment gateway: POST /charges charges (not idempotent), GET /charges?event_id= looks one up. */
function gateway(base) {
  return {
    /** Charges the event; resolves to the charge id. */
    async charge(event, signal) {
      const res = await fetch(`${base}/charges`, {
        method: 'POST', signal, headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ event_id: event.id, amount: event.amount }),
      });
      if (res.status !== 201) throw new Error(`gateway charge: HTTP ${res.status}`);
      return (await res.json()).id;
    },
    /** The charge id made for the event, or null when there is none. Throws when the gateway cannot tell. */
    async findCharge(eventId, signal) {
      const res = await fetch(`${base}/charges?event_id=${encodeURIComponent(eventId)}`, { signal });
      if (res.status === 404) return null;
      if (res.status !== 200) throw new Error(`gateway lookup: HTTP ${res.status}`);
      return (await res.json()).id;
    },
  };
}

/**
 * Consumes queue until the connection closes (resolves false) or signal
 * aborts (stops consuming, lets the messages in hand finish, closes; resolves
 * true). hooks.at(point, info) is awaited at each point where a crash
 * matters (the crash test kills the process there); it defaults to nothing.
 */
async function consume({
  amqpUrl, queue, dedupdAddr, gatewayUrl, settle = true, prefetch = 8, leaseTtl = 2, hooks = null, signal = null,
}) {
  const at = hooks ? hooks.at : async () => {};
  const pay = gateway(gatewayUrl);
  const client = new dedupd.Client(dedupdAddr);
  const conn = await amqp.connect(amqpUrl);
  const channel = await conn.createChannel();
  await channel.prefetch(prefetch);
  const inflight = new Set();

  // One function for do() and reconcile(): did an earlier holder charge this event?
  const findCharge = async (token, attempt, signal, record) => {
    const id = await pay.findCharge(record.key, signal);
    await at('settled', { eventId: record.key, attempt, found: id !== null });
    return id;
  };

  async function handle(msg) {
    const event = JSON.parse(msg.content.toString());
    const drop = () => conn.connection.stream.destroy(new Error('connection dropped'));
    const info = { eventId: event.id, messageId: msg.properties.messageId, drop };
    const charge = async (token, attempt, signal) => {
      await at('claimed', { ...info, attempt });
      signal.throwIfAborted(); // the lease is gone: another consumer holds the event now
      const id = await pay.charge(event, signal);
      await at('charged', { ...info, attempt });
      return id;
    };
    try {
      await dedupd.do(client, CONSUMER, event.id, charge, {
        digest: dedupd.digestJSON(event), leaseTtl, maxWait: 4 * leaseTtl, settle: settle ? findCharge : null,
      });
    } catch (err) {
      if (err instanceof dedupd.Rejected || err instanceof dedupd.DigestMismatch) {
        channel.nack(msg, false, false); // never succeeds: dead-letter
        return;
      }
      // Unknown or retryable: requeue after about a lease, by when a
      // holder's lease has run out and the redelivery can settle.
      await new Promise((resolve) => setTimeout(resolve, leaseTtl * 1000));
      channel.nack(msg, false, true);
      return;
    }
    await at('completed', info);
    channel.ack(msg);
  }

  const { consumerTag } = await channel.consume(queue, (msg) => {
    if (msg === null) return; // the queue was deleted
    const job = handle(msg).catch(() => {}).finally(() => inflight.delete(job));
    inflight.add(job);
  }, { noAck: false });

  // Return once the connection is gone (after the work in hand recorded its
  // outcome in dedupd: its acks are lost with the channel, so RabbitMQ
  // redelivers those messages and do() replays them), or once asked to stop.
  const closed = new Promise((resolve) => {
    conn.on('close', () => resolve(false));
    conn.on('error', () => {});
  });
  const stopped = new Promise((resolve) => {
    if (!signal) return;
    if (signal.aborted) resolve(true); // asked to stop while it was connecting
    else signal.addEventListener('abort', () => resolve(true), { once: true });
  });
  const graceful = await Promise.race([closed, stopped]);
  // A stop waits for the work in hand, but not for ever: past a bound the
  // process ends as a crash would (the messages in hand go back to the
  // queue with the connection, and settle sorts out what they did), since
  // whoever asked it to stop would kill it next anyway.
  const bound = new Promise((resolve) => setTimeout(resolve, (6 * leaseTtl + 5) * 1000).unref());
  const finish = async () => {
    if (graceful) await channel.cancel(consumerTag);
    await Promise.allSettled([...inflight]);
    return true;
  };
  if (!(await Promise.race([finish(), bound]))) {
    client.close();
    return false;
  }
  if (graceful) {
    await channel.close(); // queued behind the acks on the channel, so they reach the broker first
    await conn.close();
  }
  client.close();
  return graceful;
}

/** Consumes with settings from the environment; SIGTERM stops it gracefully. */
async function main(hooks = null) {
  const stop = new AbortController();
  process.once('SIGTERM', () => stop.abort());
  const env = process.env;
  return consume({
    amqpUrl: env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672',
    queue: env.QUEUE || 'payments',
    dedupdAddr: env.DEDUPD_ADDR || '127.0.0.1:7070',
    gatewayUrl: env.GATEWAY_URL || 'http://127.0.0.1:8080',
    settle: env.SETTLE !== '0',
    signal: stop.signal,
    hooks,
  });
}

/** Runs main and exits: 0 after a graceful stop, 3 when the connection dropped (a supervisor starts a new one). */
function run(hooks = null) {
  main(hooks).then((graceful) => process.exit(graceful ? 0 : 3), (err) => { console.error(err); process.exit(1); });
}

if (require.main === module) run();

module.exports = { consume, gateway, run };
