// Declarations of @dedupd/client/receipts (src/receipts.js, re-exported by
// src/receipts.mjs). The pool and client types are structural, so that the
// package needs no types of pg: a pg.Pool and its pg.PoolClient fit them
// (examples/receipts.ts checks it against pg's own declarations).

import type { BatchSettle, BatchWork, CallOptions, Client, DedupRecord, FencingToken, Int64, Payload, Settle, Work } from './index.js';

/** What the helper needs of a pg result. */
export interface ReceiptQueryResult {
  rows: any[];
  rowCount: number | null;
  command: string;
}

/** What the helper needs of a pg client in a transaction (a pg.PoolClient, a pg.Client): query. */
export interface ReceiptQueryable {
  query(text: string, values?: any[]): Promise<ReceiptQueryResult>;
}

/** A client taken from a pool: release(err) returns it, or closes it when err is set. */
export interface ReceiptPoolClient extends ReceiptQueryable {
  release(err?: Error | boolean): void;
}

/** A pg.Pool as the helper uses it: its transactions take a client with connect(). */
export interface ReceiptPool<C extends ReceiptPoolClient = ReceiptPoolClient> extends ReceiptQueryable {
  connect(): Promise<C>;
}

/** The isolation level run() begins its transactions with. */
export type IsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

export interface ReceiptsOptions<C extends ReceiptPoolClient = ReceiptPoolClient> {
  /** The pool run(), settle, lookup and prune take their clients from. */
  pool: ReceiptPool<C>;
  /** The dedupd consumer the receipts belong to. */
  consumer: string;
  /** Seconds a receipt lives: the consumer's retention of completed records (ttlFromPolicy). */
  ttl: number;
  /** The receipt table; DEFAULT_TABLE ('dedupd_receipts') when unset. A plain SQL identifier. */
  table?: string;
  /** run()'s isolation level; the server's default when unset. */
  isolation?: IsolationLevel | null;
  /** run()'s attempts on a serialization failure (40001); DEFAULT_MAX_ATTEMPTS when unset. */
  maxAttempts?: number;
  /** The clock; () => new Date() when unset. */
  now?: () => Date;
}

/** What an effect learns about its attempt: attempt, signal and record are set under do(). */
export interface EffectInfo {
  key: string;
  /** The fencing token, a decimal string. */
  token: Int64;
  attempt?: Int64;
  signal?: AbortSignal;
  record?: DedupRecord;
}

/**
 * An effect: it changes the caller's database through client, inside the
 * receipt's transaction, and returns the result to store.
 */
export type ReceiptEffect<C extends ReceiptPoolClient = ReceiptPoolClient> = (client: C, info: EffectInfo) =>
  Payload | null | undefined | void | Promise<Payload | null | undefined | void>;

/** A key's live receipt. */
export interface Receipt {
  /** The fencing token it was written under, a decimal string. */
  token: Int64;
  result: Buffer;
}

/** Receipts of one consumer in one PostgreSQL or CockroachDB database. */
export declare class Receipts<C extends ReceiptPoolClient = ReceiptPoolClient> {
  constructor(options: ReceiptsOptions<C>);
  readonly consumer: string;
  readonly ttl: number;
  readonly table: string;
  /**
   * Records, inside the caller's transaction (client in BEGIN), that the
   * effect of key happened under token with result. Rejects with
   * StaleReceipt when a live receipt exists: roll the transaction back.
   */
  write(client: ReceiptQueryable, key: string, token: FencingToken, result?: Payload | null): Promise<void>;
  /**
   * Runs effect and the receipt in one transaction, again from BEGIN on a
   * serialization failure; resolves to the stored result. Rejects with
   * StaleReceipt (rolled back), UnknownOutcome (40003, a failed COMMIT),
   * or effect's own error (rolled back).
   */
  run(key: string, token: FencingToken, effect: ReceiptEffect<C>): Promise<Buffer>;
  /** do()'s fn: effect and its receipt under the attempt's key and token, through run(). */
  effect(effect: ReceiptEffect<C>): Work;
  /** doBatch()'s fn: the same, with doBatch's arguments. */
  batchEffect(effect: ReceiptEffect<C>): BatchWork;
  /** do()'s, doBatch()'s and reconcile()'s settle: the live receipt's result, or null. A bound function. */
  readonly settle: Settle & BatchSettle;
  /** The key's live receipt, or null. */
  lookup(key: string): Promise<Receipt | null>;
  /** Deletes expired receipts (of every consumer in the table), batch rows per transaction (default 1000); resolves to how many. */
  prune(batch?: number): Promise<number>;
}

/** Runs migration version 1 (the receipt table and <table>_schema), idempotently, one statement per transaction. */
export declare function migrate(pool: ReceiptPool, options?: { table?: string }): Promise<void>;

/** The consumer's completed retention in seconds, from dedupd (AdminService.GetPolicy; needs admin permission). */
export declare function ttlFromPolicy(client: Client, consumer: string, options?: CallOptions): Promise<number>;

/** A live receipt exists: the effect already happened under another holder. Roll back. */
export declare class StaleReceipt extends Error {
  constructor(consumer: string, key: string);
  readonly name: 'StaleReceipt';
  readonly consumer: string;
  readonly key: string;
}

/** The transaction may or may not have committed; do() leaves the claim PENDING. cause is the database's error. */
export declare class UnknownOutcome extends Error {
  constructor(cause: unknown);
  readonly name: 'UnknownOutcome';
  readonly outcomeUnknown: true;
}

export declare const DEFAULT_TABLE: 'dedupd_receipts';
export declare const SCHEMA_VERSION: 1;
export declare const DEFAULT_MAX_ATTEMPTS: number;
export declare const ISOLATION_LEVELS: readonly IsolationLevel[];
