'use strict';
// Streams against a real dedupd: a stream claimed in order, a duplicate
// skipped, a gap refused with the expected sequence; doInOrder under a
// redelivering loop; poison events and releases.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');

const dedupd = require('../src');
const { withClient, startServer, uniqueKey, sleep } = require('../testing/server');

const CONSUMER = 'node-streams';

describe('streams', () => {
  let c;
  withClient((client) => { c = client; });

  it('claims in order, skips a duplicate and refuses a gap', async () => {
    const s = uniqueKey();
    const first = await c.claimStream(CONSUMER, s, 1, { leaseTtl: 30, owner: 'node' });
    assert.equal(first.outcome, 'STREAM_OUTCOME_ACQUIRED');
    assert.equal(first.fencingToken, '1');
    const done = await c.completeStream(CONSUMER, s, 1, first.fencingToken);
    assert.equal(done.highWater, '1');
    const dup = await c.claimStream(CONSUMER, s, 1);
    assert.equal(dup.outcome, 'STREAM_OUTCOME_DUPLICATE');
    assert.equal(dup.stream.highWater, '1');
    await assert.rejects(c.claimStream(CONSUMER, s, 3), (err) => {
      assert.ok(err instanceof dedupd.SequenceGap);
      assert.equal(err.reason, 'SEQUENCE_GAP');
      assert.equal(err.expected, '2');
      assert.equal(err.stream.highWater, '1');
      return true;
    });
    await assert.rejects(c.getStream(CONSUMER, uniqueKey()), dedupd.StreamNotFound);
    await c.claimStream(CONSUMER, `${s}-v`, 1000, { mode: 'STREAM_MODE_VERSIONS' });
    await assert.rejects(c.claimStream(CONSUMER, `${s}-v`, 1001, { mode: 'STREAM_MODE_DENSE' }), dedupd.StreamModeMismatch);
  });

  it('doInOrder applies each event once, in order, under redelivery', async () => {
    const s = uniqueKey();
    const queue = [3, 1, 3, 2, 1, 4, 2];
    const applied = [];
    let gaps = 0;
    let dups = 0;
    while (queue.length > 0) {
      const seq = queue.shift();
      try {
        const res = await dedupd.doInOrder(c, CONSUMER, s, seq, () => { applied.push(seq); });
        if (res.duplicate) dups++;
      } catch (err) {
        if (!(err instanceof dedupd.SequenceGap)) throw err;
        assert.ok(Number(err.expected) < seq);
        gaps++;
        queue.push(seq); // redeliver later
      }
    }
    assert.deepEqual(applied, [1, 2, 3, 4]);
    assert.equal(dups, 3);
    assert.ok(gaps > 0);
  });

  it('doInOrder skips past a poison event and releases on other errors', async () => {
    const s = uniqueKey();
    await assert.rejects(dedupd.doInOrder(c, CONSUMER, s, 1, () => { throw new Error('boom'); }), /boom/);
    assert.equal((await c.getStream(CONSUMER, s)).inFlight, '0');
    await assert.rejects(dedupd.doInOrder(c, CONSUMER, s, 1, () => { throw new dedupd.Terminal('UNPARSEABLE', 'bad'); }),
      (err) => {
        assert.ok(err instanceof dedupd.StreamRejected);
        assert.equal(err.stream.highWater, '1');
        assert.equal(err.stream.lastRejection.reason, 'UNPARSEABLE');
        return true;
      });
    const res = await dedupd.doInOrder(c, CONSUMER, s, 2, () => {});
    assert.equal(res.stream.highWater, '2');
  });
});

// doInOrder behind another holder answers a duplicate once the holder
// completes the sequence: one claim that the server holds, or, against a
// dedupd that does not wait (as an older one), polling.
for (const [name, args, serverWaits] of [
  ['a server that waits', [], true],
  ['a server that answers at once', ['--max-claim-wait', '0'], false],
]) {
  describe(`doInOrder behind another holder, on ${name}`, () => {
    let server;
    let c;
    before(async () => {
      server = await startServer(args);
      c = new dedupd.Client(server.addr);
    });
    after(async () => {
      c.close();
      await server.stop();
    });

    for (const [mode, park] of [
      ['', {}],
      [' (park mode)', { park: true, payload: 'event 1', released: () => assert.fail('nothing was parked') }],
    ]) it(`answers a duplicate once the holder completes${mode}`, async () => {
      const s = uniqueKey('order');
      const holder = await c.claimStream(CONSUMER, s, 1, { leaseTtl: 60, owner: 'holder' });
      let claims = 0;
      let claimSent;
      const sent = new Promise((resolve) => { claimSent = resolve; });
      const counting = Object.create(c, {
        claimStream: { value: (...a) => { claims += 1; claimSent(); return c.claimStream(...a); } },
      });
      const waiting = dedupd.doInOrder(counting, CONSUMER, s, 1, () => assert.fail('fn ran'), { maxWait: 60, ...park });
      await sent;
      if (serverWaits) await sleep(300); // a polling doInOrder would claim again meanwhile
      else while (claims < 3) await sleep(10);
      await c.completeStream(CONSUMER, s, 1, holder.fencingToken);
      const out = await waiting;
      assert.equal(out.duplicate, true);
      if (serverWaits) assert.equal(claims, 1);
      else assert.ok(claims >= 3, `${claims} claims`);
    });
  });
}
