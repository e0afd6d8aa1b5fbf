'use strict';
// The per-call options every Client method takes: deadline and signal.

/**
 * The grpc-js deadline of one call: the caller's deadline (a Date, or
 * milliseconds since the epoch, as grpc-js takes it) when given, else the
 * client's timeout in seconds from now, else none (undefined).
 */
function callDeadline(deadline, timeout) {
  if (deadline !== undefined && deadline !== null) {
    const ms = deadline instanceof Date ? deadline.getTime() : deadline;
    if (typeof ms !== 'number' || !Number.isFinite(ms)) {
      throw new TypeError(`deadline must be a Date or milliseconds since the epoch, not ${typeof deadline} ${String(deadline).slice(0, 40)}`);
    }
    return deadline;
  }
  return timeout == null ? undefined : new Date(Date.now() + timeout * 1000);
}

/** Throws unless signal is unset or looks like an AbortSignal (any realm's). */
function checkSignal(signal) {
  if (signal === undefined || signal === null) return;
  if (typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw new TypeError('signal must be an AbortSignal');
  }
}

module.exports = { callDeadline, checkSignal };
