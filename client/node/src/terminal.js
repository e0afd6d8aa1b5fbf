'use strict';
// Terminal: what fn or settle throws to refuse the work for good. Its own
// module because do(), doBatch(), doInOrder(), settle and reconcile() all
// recognise it.

/** Throw from fn (or settle) to refuse the work for good: the rejection is stored and replayed. */
class Terminal extends Error {
  constructor(reason, message = '', detail = Buffer.alloc(0)) {
    super(message ? `${reason}: ${message}` : reason);
    this.name = 'Terminal';
    this.reason = reason;
    this.detail = detail;
    this.rejectionMessage = message;
  }
}

module.exports = { Terminal };
