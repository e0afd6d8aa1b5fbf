'use strict';
// Transactions over a pg pool for the receipts helper, and how their
// failures are classified: a serialization failure (40001, CockroachDB's
// legacy CR000) rolled the whole transaction back, so it is run again from
// BEGIN; 40003 (CockroachDB's "result is ambiguous") or a COMMIT that failed
// otherwise (a broken connection) leaves the outcome unknown, never success.

/** The isolation levels inTx may BEGIN with; null or undefined is the server's default. */
const ISOLATION_LEVELS = ['read committed', 'repeatable read', 'serializable'];

/**
 * A live receipt for the key already exists: the effect already happened
 * under another holder. The transaction that tried to write this receipt
 * must roll back, taking its effect with it (run() does). The counterpart
 * of the Go helper's ErrStale.
 */
class StaleReceipt extends Error {
  constructor(consumer, key) {
    super(`receipts: a live receipt exists for ${consumer}/${key}: the effect already happened under another holder`);
    this.name = 'StaleReceipt';
    this.consumer = consumer;
    this.key = key;
  }
}

/**
 * The transaction may or may not have committed (40003, or a COMMIT that
 * failed but for a serialization failure). outcomeUnknown is true, so do()
 * leaves the claim PENDING for settle to decide; cause is the database's
 * error.
 */
class UnknownOutcome extends Error {
  constructor(cause) {
    super(`receipts: the transaction's outcome is unknown: ${cause && cause.message}`, { cause });
    this.name = 'UnknownOutcome';
    this.outcomeUnknown = true;
  }
}

/** A COMMIT that failed; inTx throws it so that the caller can tell it from a failure before COMMIT. */
class CommitFailed extends Error {
  constructor(cause) {
    super(`receipts: commit: ${cause.message}`, { cause });
    this.name = 'CommitFailed';
  }
}

function checkIsolation(isolation) {
  if (isolation === null || isolation === undefined) return null;
  const level = String(isolation).toLowerCase();
  if (!ISOLATION_LEVELS.includes(level)) {
    throw new TypeError(`receipts: isolation must be one of ${ISOLATION_LEVELS.join(', ')}, not ${JSON.stringify(isolation)}`);
  }
  return level;
}

/**
 * Runs fn(client) in a new transaction on a client of pool, committing when
 * fn resolves and rolling back when it throws; a COMMIT that fails throws
 * CommitFailed. A client whose ROLLBACK or COMMIT failed is released as
 * broken (pg closes it rather than reusing it).
 */
async function inTx(pool, isolation, fn) {
  const client = await pool.connect();
  let broken;
  try {
    await client.query(isolation ? `BEGIN ISOLATION LEVEL ${isolation}` : 'BEGIN').catch((err) => {
      broken = err;
      throw err;
    });
    let out;
    try {
      out = await fn(client);
    } catch (err) {
      await client.query('ROLLBACK').catch((rbErr) => { broken = rbErr; });
      throw err;
    }
    let done;
    try {
      done = await client.query('COMMIT');
    } catch (err) {
      broken = err;
      throw new CommitFailed(err);
    }
    // PostgreSQL answers COMMIT of a failed transaction (a statement's
    // error that fn caught) with ROLLBACK, not an error: nothing committed.
    if (done && done.command === 'ROLLBACK') {
      throw new Error('receipts: the transaction rolled back at COMMIT: a statement in it failed and its error was caught');
    }
    return out;
  } finally {
    client.release(broken);
  }
}

/** The SQLSTATE of err or of what it wraps, or ''. */
function sqlState(err) {
  for (let e = err; e; e = e.cause) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  }
  return '';
}

/** A serialization failure: the whole transaction rolled back, running it again is safe. */
function retryable(err) {
  const state = sqlState(err);
  return state === '40001' || state === 'CR000';
}

/** The transaction may have committed or not. */
function ambiguous(err) {
  return sqlState(err) === '40003' || (err instanceof CommitFailed && !retryable(err));
}

module.exports = { ISOLATION_LEVELS, StaleReceipt, UnknownOutcome, CommitFailed, checkIsolation, inTx, retryable, ambiguous };
