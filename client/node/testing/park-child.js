'use strict';
// A consumer process that test/park.test.js kills: it delivers one event
// with doInOrder({park: true}) and SIGKILLs itself at the crash point it is
// told, after the server answered the call before it. Exit status 3 means
// it never reached the point.
//   node testing/park-child.js '{"addr", "stream", "sequence", "crash", "ledger"}'

const dedupd = require('../src');
const { CONSUMER, LEASE, Ledger } = require('./park-ledger');

const orders = JSON.parse(process.argv[2]);
const { crash, sequence } = orders;
const ledger = new Ledger(orders.ledger);
const die = () => process.kill(process.pid, 'SIGKILL');

async function main() {
  const c = new dedupd.Client(orders.addr);
  // Dies right after the reply that reaches the crash point.
  const claimStream = c.claimStream.bind(c);
  c.claimStream = async (...args) => {
    const resp = await claimStream(...args);
    if (crash === 'after-park' && resp.outcome === 'STREAM_OUTCOME_PARKED') die();
    return resp;
  };
  const completeStreamNext = c.completeStreamNext.bind(c);
  c.completeStreamNext = async (consumer, stream, seq, ...rest) => {
    const resp = await completeStreamNext(consumer, stream, seq, ...rest);
    if ((crash === 'after-release' && Number(seq) === sequence && resp.next)
      || (crash === 'after-completion' && Number(seq) === sequence + 1)) die();
    return resp;
  };
  const released = (event) => {
    if (crash === 'before-effect') die();
    ledger.released(event);
    if (crash === 'after-effect') die();
  };
  const res = await dedupd.doInOrder(c, CONSUMER, orders.stream, sequence, () => {
    ledger.apply(sequence);
    if (crash === 'delivered-after-effect') die();
  }, { ...ledger.options(sequence, released), leaseTtl: LEASE });
  process.stderr.write(`reached no crash point (${crash}): ${JSON.stringify(res)}\n`);
  process.exit(3);
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(3);
});
