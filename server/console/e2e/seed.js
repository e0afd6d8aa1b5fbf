'use strict';
// The records and streams the browser test looks at, stored through the
// HTTP API as any client would store them.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const b64 = (s) => Buffer.from(s).toString('base64');
/** The digest each claim sends: SHA-256 of its key, as a client might. */
const digest = (key) => crypto.createHash('sha256').update(key).digest();

const JSON_RESULT = '{"id":"ch_1","amount":4200,"big":12345678901234567890,"card":{"last4":"4242","ok":true},"tags":[]}';
const GATEWAY_BODY = '{"order":7,"status":"created"}';
const GATEWAY_RESULT = 'HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nLocation: /orders/7\r\n'
  + `Content-Length: ${GATEWAY_BODY.length}\r\n\r\n${GATEWAY_BODY}`;
const HOSTILE_KEY = '<img src=x onerror=alert(1)>';
const HOSTILE_RESULT = '</script><script>alert(1)</script><img src=x onerror=alert(2)>';
const ODD_KEY = 'a/b%c?d#e f ü/..';
const DOTS_KEY = '..';

const keys = {
  json: 'charge-42', gateway: 'anonymous order-7', hostile: HOSTILE_KEY, odd: ODD_KEY, dots: DOTS_KEY,
  stuck: 'stuck-1', live: 'in-flight-1', rejected: 'charge-rejected', binary: 'blob-1',
};

async function claim(call, consumer, key, leaseTtl = '60s', owner = 'worker-a') {
  const r = await call('DedupService', 'Claim', { consumer, key, digest: digest(key).toString('base64'), leaseTtl, owner });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.outcome, 'OUTCOME_ACQUIRED');
  return r.body.fencingToken;
}

async function complete(call, consumer, key, result) {
  const token = await claim(call, consumer, key);
  const r = await call('DedupService', 'Complete', { consumer, key, fencingToken: token, result: Buffer.from(result).toString('base64') });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

/** Stores everything; resolves once the stuck claim's lease has run out. */
async function seed(call) {
  await complete(call, 'payments', keys.json, JSON_RESULT);
  await complete(call, 'payments', keys.gateway, GATEWAY_RESULT);
  await complete(call, 'payments', keys.hostile, HOSTILE_RESULT);
  await complete(call, 'payments', keys.odd, 'plain text, ünïcode');
  await complete(call, 'payments', keys.dots, 'two dots');
  await complete(call, 'payments', keys.binary, Buffer.from([0, 1, 2, 0xff, 0xfe, 0x41, 0x42]));
  const rt = await claim(call, 'payments', keys.rejected);
  const rej = await call('DedupService', 'Reject', { consumer: 'payments', key: keys.rejected, fencingToken: rt, reason: 'CARD_DECLINED', message: 'the card was declined' });
  assert.equal(rej.status, 200);
  await claim(call, 'payments', keys.live, '600s', 'worker-b');
  await claim(call, 'payments', keys.stuck, '1s', 'worker-crashed');
  for (let i = 0; i < 3; i++) await complete(call, 'webhooks', `evt-${i}`, `{"n":${i}}`);
  // A dense stream with sequence 1 done, 2 missing and 3 parked.
  const c1 = await call('StreamService', 'ClaimStream', { consumer: 'orders', stream: 'order-42', sequence: 1 });
  assert.equal(c1.body.outcome, 'STREAM_OUTCOME_ACQUIRED', JSON.stringify(c1.body));
  await call('StreamService', 'CompleteStream', { consumer: 'orders', stream: 'order-42', sequence: 1, fencingToken: c1.body.fencingToken });
  const p3 = await call('StreamService', 'ClaimStream', { consumer: 'orders', stream: 'order-42', sequence: 3, park: true, payload: b64('{"event":"paid"}') });
  assert.equal(p3.body.outcome, 'STREAM_OUTCOME_PARKED', JSON.stringify(p3.body));
  const p5 = await call('StreamService', 'ClaimStream', { consumer: 'orders', stream: 'order-42', sequence: 5, park: true, payload: b64('{"event":"shipped"}') });
  assert.equal(p5.body.outcome, 'STREAM_OUTCOME_PARKED', JSON.stringify(p5.body));
  // Wait until the stuck claim's lease has run out, as the API sees it.
  for (;;) {
    const q = await call('DedupService', 'ListRecords', { consumer: 'payments', leaseExpired: true });
    if ((q.body.records || []).some((r) => r.key === keys.stuck)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

module.exports = { seed, claim, complete, digest, keys, JSON_RESULT, GATEWAY_BODY, HOSTILE_RESULT };
