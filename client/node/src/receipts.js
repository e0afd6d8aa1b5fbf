'use strict';
// Receipts: a row in the caller's own PostgreSQL or CockroachDB database,
// committed in the caller's own transaction beside the effect, that says
// "the effect of (consumer, key) happened under fencing token T with result
// R". The effect and its receipt commit or roll back together, so a
// takeover holder settles by asking the database (settle), and do() with
// receipts needs no hand-written settle. The table, its migration and the
// semantics are the Go helper's (client/receipts), so that services in
// several languages share one table:
//
//   migrate(pool)       creates the table (migration version 1) and records
//                       the version in <table>_schema, one statement per
//                       transaction, idempotently;
//   r.write(client,...) records the receipt inside the caller's transaction
//                       (a pg client in BEGIN); StaleReceipt when a live
//                       receipt exists: the caller must roll back;
//   r.run(key, token, effect) runs effect and the receipt in one
//                       transaction, retried from BEGIN on 40001, rolled
//                       back on StaleReceipt; 40003 or a failed COMMIT is
//                       UnknownOutcome (do() leaves the claim PENDING);
//   r.effect(effect)    the same as do()'s fn (r.batchEffect: doBatch()'s);
//   r.settle            do()'s, doBatch()'s and reconcile()'s settle;
//   r.prune(batch)      deletes expired receipts in bounded batches.
//
// A receipt expires with the consumer's retention of completed records
// (ttl, in seconds; ttlFromPolicy reads it), so it never outlives the record
// it stands for. Fencing tokens are decimal strings, as everywhere in this
// client (a bigint or a safe integer is taken too).

const { int64, toBuffer } = require('./client');
const { DEFAULT_TABLE, SCHEMA_VERSION, migration, statements, tableName } = require('./receiptsql');
const { ISOLATION_LEVELS, StaleReceipt, UnknownOutcome, ambiguous, checkIsolation, inTx, retryable } = require('./receipttx');
const { ttlFromPolicy } = require('./receiptpolicy');

/** How many times run() tries a transaction that keeps failing with a serialization failure. */
const DEFAULT_MAX_ATTEMPTS = 5;

/**
 * Runs migration version 1 on pool (a pg.Pool), idempotently: the receipt
 * table (DEFAULT_TABLE unless table is given), then the table recording the
 * version, each statement in its own transaction.
 */
async function migrate(pool, { table } = {}) {
  for (const stmt of migration(tableName(table))) {
    await inTx(pool, null, (client) => client.query(stmt));
  }
}

class Receipts {
  /**
   * Options: pool (a pg.Pool: run, settle and prune take their clients
   * from it), consumer (the dedupd consumer), ttl (seconds a receipt lives:
   * the consumer's completed retention, see ttlFromPolicy; required), table
   * (DEFAULT_TABLE when unset), isolation (the level run() begins its
   * transactions with: 'read committed', 'repeatable read' or
   * 'serializable'; the server's default when unset), maxAttempts (run()'s
   * attempts on 40001; DEFAULT_MAX_ATTEMPTS), now (the clock; () => new
   * Date()).
   */
  constructor({ pool, consumer, ttl, table, isolation, maxAttempts = DEFAULT_MAX_ATTEMPTS, now } = {}) {
    if (typeof consumer !== 'string' || consumer === '') throw new TypeError('receipts: consumer must be a non-empty string');
    if (typeof ttl !== 'number' || !(ttl > 0) || !Number.isFinite(ttl)) {
      throw new TypeError(`receipts: ttl must be a positive number of seconds (the consumer's completed retention), not ${ttl}`);
    }
    if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) throw new TypeError(`receipts: maxAttempts must be a positive integer, not ${maxAttempts}`);
    this.pool = pool;
    this.consumer = consumer;
    this.ttl = ttl;
    this.table = tableName(table);
    this.isolation = checkIsolation(isolation);
    this.maxAttempts = maxAttempts;
    this.now = now || (() => new Date());
    this.sql = statements(this.table);
    // A bound function, so that `settle: r.settle` works as do()'s option.
    this.settle = this.settle.bind(this);
  }

  /**
   * Records, inside the caller's transaction (client: a pg client in
   * BEGIN), that the effect of key happened under token with result (a
   * Buffer or a string; empty when null). Throws StaleReceipt when a live
   * receipt exists: the caller must roll its transaction back.
   */
  async write(client, key, token, result) {
    const fencingToken = positiveToken(token);
    const now = this.now();
    const expires = new Date(now.getTime() + this.ttl * 1000);
    const res = await client.query(this.sql.write, [this.consumer, key, fencingToken, toBuffer(result), now, expires]);
    if (res.rows.length === 0) throw new StaleReceipt(this.consumer, key);
  }

  /**
   * Runs effect(client, {key, token}) and the receipt of (key, token) in one
   * transaction and resolves to the result (a Buffer) effect returned. The
   * whole transaction runs again on a serialization failure, at most
   * maxAttempts times; StaleReceipt (or any error of effect) rolls it back
   * and is thrown. An outcome nobody can know (40003, a failed COMMIT) is
   * thrown as UnknownOutcome, so that do() leaves the claim PENDING.
   */
  async run(key, token, effect, info = {}) {
    const fencingToken = positiveToken(token);
    let lastErr;
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      try {
        return await inTx(this.pool, this.isolation, async (client) => {
          const result = toBuffer(await effect(client, { ...info, key, token: fencingToken }));
          await this.write(client, key, fencingToken, result);
          return result;
        });
      } catch (err) {
        if (ambiguous(err)) throw new UnknownOutcome(err.cause || err); // a CommitFailed's cause is the database's error
        if (!retryable(err)) throw err;
        lastErr = err;
      }
    }
    throw new Error(`receipts: gave up after ${this.maxAttempts} serialization failures: ${lastErr.message}`, { cause: lastErr });
  }

  /**
   * do()'s fn for effect: it runs effect(client, {key, token, attempt,
   * signal, record}) and the receipt under the attempt's key and fencing
   * token, through run().
   */
  effect(effect) {
    return (token, attempt, signal, record) => this.run(record.key, token, effect, { attempt, signal, record });
  }

  /** doBatch()'s fn for effect: the same as effect(), with doBatch's arguments. */
  batchEffect(effect) {
    return (key, token, attempt, signal, record) => this.run(key, token, effect, { attempt, signal, record });
  }

  /**
   * do()'s, doBatch()'s and reconcile()'s settle: the effect of the
   * record's key (the record is the last argument in all three) happened
   * when a live receipt exists, and its result is the receipt's; null when
   * none. A database error is thrown, which leaves the outcome unknown (the
   * claim stays PENDING).
   */
  async settle(...args) {
    const record = args[args.length - 1];
    const found = await this.lookup(record.key);
    return found ? found.result : null;
  }

  /** The key's live receipt, {token, result} (token a decimal string, result a Buffer), or null. */
  async lookup(key) {
    const res = await this.pool.query(this.sql.settle, [this.consumer, key, this.now()]);
    if (res.rows.length === 0) return null;
    return { token: res.rows[0].fencing_token, result: res.rows[0].result };
  }

  /**
   * Deletes the receipts expired by now, of every consumer in the table,
   * at most batch rows per transaction, until none is left; resolves to
   * how many it deleted.
   */
  async prune(batch = 1000) {
    if (!Number.isSafeInteger(batch) || batch < 1) throw new TypeError(`receipts: prune batch must be a positive integer, not ${batch}`);
    const now = this.now();
    let deleted = 0;
    for (;;) {
      const res = await inTx(this.pool, null, (client) => client.query(this.sql.prune, [now, batch]));
      deleted += res.rowCount;
      if (res.rowCount < batch) return deleted;
    }
  }
}

/** token as a decimal string; a TypeError unless it is an int64 above 0. */
function positiveToken(token) {
  const t = int64(token);
  if (BigInt(t) <= 0n) throw new TypeError(`receipts: fencing token must be positive, got ${t}`);
  return t;
}

module.exports = {
  Receipts, migrate, ttlFromPolicy, StaleReceipt, UnknownOutcome,
  DEFAULT_TABLE, SCHEMA_VERSION, DEFAULT_MAX_ATTEMPTS, ISOLATION_LEVELS,
};
