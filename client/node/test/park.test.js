'use strict';
// Park mode against a real dedupd: early events parked and run in order as
// the gap fills; a server without park mode refused clearly; the lease
// extended while a released event runs; a consumer killed (SIGKILL) at
// each point between park, release, effect and completion, picked up by
// doParked, with every effect once.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { describe, it, before, after } = require('node:test');

const dedupd = require('../src');
const { startServer, uniqueKey, sleep } = require('../testing/server');
const { CONSUMER, LEASE, Ledger, payloadOf } = require('../testing/park-ledger');

describe('park mode', () => {
  let server;
  let c;
  before(async () => {
    server = await startServer();
    c = new dedupd.Client(server.addr);
  });
  after(async () => {
    c.close();
    await server.stop();
  });

  it('parks early events and runs them in order as the gap fills', async () => {
    const s = uniqueKey('order');
    const applied = [];
    const released = (event) => { applied.push(`${event.sequence}:${event.payload}`); };
    const deliver = (seq) => dedupd.doInOrder(c, CONSUMER, s, seq, () => { applied.push(`${seq}:${payloadOf(seq)}`); },
      { park: true, payload: payloadOf(seq), released });
    for (const seq of [4, 3, 2, 3]) {
      const res = await deliver(seq);
      assert.equal(res.parked, true, `${seq}`);
      assert.equal(res.duplicate, false);
    }
    assert.deepEqual(applied, []);
    const res = await deliver(1);
    assert.deepEqual(applied, [1, 2, 3, 4].map((n) => `${n}:event-${n}`));
    assert.deepEqual(res.released, ['2', '3', '4']);
    assert.equal(res.unfinished, null);
    assert.equal(res.stream.highWater, '4');
    assert.equal((await deliver(3)).duplicate, true);
  });

  it('refuses clearly, after one claim, a server without park mode', async () => {
    const s = uniqueKey('order');
    const claims = [];
    // An older dedupd: the park fields are dropped on the way.
    const old = Object.create(c);
    old.claimStream = (consumer, stream, seq, { park, payload, ...rest } = {}) => {
      claims.push(park);
      return c.claimStream(consumer, stream, seq, rest);
    };
    const ran = [];
    await assert.rejects(dedupd.doInOrder(old, CONSUMER, s, 2, () => ran.push('fn'), { park: true, payload: 'x', released: () => ran.push('released') }),
      (err) => err instanceof dedupd.ParkUnsupported && err.cause instanceof dedupd.SequenceGap);
    assert.deepEqual([claims, ran], [[true], []]);
    await assert.rejects(dedupd.doInOrder(c, CONSUMER, s, 2, () => {}, { park: true }), TypeError);
  });

  it('extends the lease while a released event runs', async () => {
    const s = uniqueKey('order');
    const seen = [];
    const slow = async (event, signal) => {
      for (let i = 0; i < 5; i++) { // 2.5 leases of 1 s
        await sleep(500);
        const other = await c.claimStream(CONSUMER, s, event.sequence);
        seen.push([other.outcome, (await c.claimParked(CONSUMER, { stream: s })).event, signal.aborted]);
      }
    };
    await dedupd.doInOrder(c, CONSUMER, s, 2, () => {}, { park: true, payload: 'x', released: slow, leaseTtl: 1 });
    const res = await dedupd.doInOrder(c, CONSUMER, s, 1, () => {}, { park: true, released: slow, leaseTtl: 1 });
    assert.deepEqual(res.released, ['2']);
    assert.deepEqual(seen, Array(5).fill(['STREAM_OUTCOME_IN_PROGRESS', null, false]));
  });

  // Events 1..4 of a stream; a child process delivers one and is killed at
  // the crash point without acking, so its message is delivered again here,
  // and doParked takes over what it held once the lease ran out.
  for (const [crash, pickedUp] of [['after-park', false], ['delivered-after-effect', false], ['after-release', true],
    ['before-effect', true], ['after-effect', true], ['after-completion', true]]) {
    it(`loses nothing to a kill -9 ${crash}, and applies every effect once`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dedupd-park-'));
      try {
        const ledger = new Ledger(path.join(dir, 'ledger'));
        const s = uniqueKey(crash);
        const [child, first, then] = crash === 'after-park' ? [3, [], [3, 2, 4, 1]] : [1, [2, 3, 4], [1]];
        const deliver = async (seq) => {
          const res = await dedupd.doInOrder(c, CONSUMER, s, seq, () => ledger.apply(seq), { ...ledger.options(seq), leaseTtl: LEASE });
          assert.equal(res.unfinishedError, null);
        };
        for (const seq of first) await deliver(seq);
        const orders = { addr: server.addr, stream: s, sequence: child, crash, ledger: ledger.file };
        const proc = spawnSync(process.execPath, [path.join(__dirname, '..', 'testing', 'park-child.js'), JSON.stringify(orders)], { encoding: 'utf8' });
        assert.equal(proc.signal, 'SIGKILL', proc.stderr);
        for (const seq of then) await deliver(seq);
        let picked = 0;
        while (Number((await c.getStream(CONSUMER, s)).highWater) < 4) {
          const res = await dedupd.doParked(c, CONSUMER, (event) => ledger.released(event),
            { stream: s, settle: (event) => (ledger.has(event.sequence) ? 'applied' : null) });
          assert.equal(res.unfinishedError, null);
          picked += res.released.length;
          if (!res.found) await sleep(50); // the killed holder's lease has not run out yet
        }
        assert.deepEqual(ledger.lines(), ['1', '2', '3', '4']);
        assert.equal(picked > 0, pickedUp, `${picked} picked up`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
