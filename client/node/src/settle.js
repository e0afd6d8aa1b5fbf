'use strict';
// The settle hook shared by do(), doBatch(), doInOrder() and reconcile().
// An acquisition whose attempt is above 1 follows an earlier holder that
// may have done the effect before it crashed, lost its lease or was
// released; settle asks the caller's own system (a payment gateway's
// lookup by event id, a row in the caller's database) whether it did:
//   a result (string or bytes)  the effect happened: record it, skip fn
//   null                        it did not: run fn
//   throw Terminal              refuse the key for good
//   throw anything else         still unknown: leave the claim PENDING
// undefined is refused as a TypeError (so a settle that forgot its return
// cannot run the effect twice), and counts as "still unknown".

const { setTimeout: delay } = require('node:timers/promises');
const { Terminal } = require('./terminal');

/**
 * Runs settle(...args) when the attempt may follow an earlier holder:
 * above 1, or null when the API keeps no count (streams). Resolves
 * to {settled: true, result}, {settled: false} (run fn), or {terminal}
 * (settle threw Terminal); rethrows any other error.
 */
async function runSettle(settle, attempt, args) {
  if (!settle || (attempt !== null && BigInt(attempt) <= 1n)) return { settled: false };
  let found;
  try {
    found = await settle(...args);
  } catch (err) {
    if (err instanceof Terminal) return { terminal: err };
    throw err;
  }
  if (found === undefined) {
    throw new TypeError('settle must return the effect\'s result, or null when the effect did not happen; it returned undefined');
  }
  return found === null ? { settled: false } : { settled: true, result: found };
}

/** Aborts controller when the caller's signal aborts; returns the function that unlinks them. */
function linkSignal(signal, controller) {
  if (!signal) return () => {};
  if (signal.aborted) {
    controller.abort(signal.reason);
    return () => {};
  }
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/** Sleeps ms; rejects with the signal's reason if it aborts first. */
async function sleepUnlessAborted(ms, signal) {
  if (!signal) return delay(ms);
  try {
    return await delay(ms, undefined, { signal });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw err;
  }
}

/**
 * claim() (a call the server may hold, waiting for another holder), whose
 * abort by the caller's signal throws the signal's reason, as the sleeps
 * between claims do.
 */
async function claimUnlessAborted(signal, claim) {
  try {
    return await claim();
  } catch (err) {
    if (signal && signal.aborted) throw signal.reason;
    throw err;
  }
}

/**
 * Whether fn's error leaves the outcome unknown, so that the claim must
 * stay PENDING as after a crash: the caller's signal aborted (a
 * cancellation), or the error is a timeout or an abort (name TimeoutError
 * or AbortError, as AbortSignal.timeout() and fetch() give): the request
 * may have done its work after the caller stopped waiting. Terminal is
 * never unknown. An error with outcomeUnknown set to true says so itself
 * (the HTTP middleware's upstream that broke after the request was sent).
 */
function unknownOutcome(err, callerSignal) {
  if (err instanceof Terminal) return false;
  if (callerSignal && callerSignal.aborted) return true;
  return Boolean(err) && (err.name === 'TimeoutError' || err.name === 'AbortError' || err.outcomeUnknown === true);
}

module.exports = { claimUnlessAborted, runSettle, linkSignal, sleepUnlessAborted, unknownOutcome };
