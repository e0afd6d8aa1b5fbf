'use strict';
// The non-idempotent fake effect of the park tests, shared by processes:
// each effect appends its sequence as one line of a file, so an effect done
// twice shows, whoever did it, and survives kill -9. test/park.test.js
// and testing/park-child.js use it.

const fs = require('node:fs');
const { Terminal } = require('../src');

const CONSUMER = 'node-park';
const LEASE = 0.5; // seconds: the crashed holder's lease, waited out by doParked

const payloadOf = (seq) => Buffer.from(`event-${seq}`);

class Ledger {
  constructor(file) {
    this.file = file;
  }

  apply(seq) {
    fs.appendFileSync(this.file, `${seq}\n`); // one write: whole or absent
  }

  lines() {
    try {
      return fs.readFileSync(this.file, 'utf8').split('\n').filter(Boolean);
    } catch (err) {
      if (err.code === 'ENOENT') return [];
      throw err;
    }
  }

  has(seq) {
    return this.lines().includes(String(seq));
  }

  released(event) {
    if (!event.payload.equals(payloadOf(event.sequence))) throw new Terminal('WRONG_PAYLOAD', `${event.sequence}: ${event.payload}`);
    this.apply(event.sequence);
  }

  /** doInOrder's park options with this ledger as effect and settle. */
  options(seq, released = (event) => this.released(event)) {
    return {
      park: true,
      payload: payloadOf(seq),
      released,
      settle: () => (this.has(seq) ? 'applied' : null),
      settleReleased: (event) => (this.has(event.sequence) ? 'applied' : null),
    };
  }
}

module.exports = { CONSUMER, LEASE, Ledger, payloadOf };
