// Declarations of @dedupd/client/powertools for CommonJS (src/powertools.js).
// src/powertools.d.mts declares the same class for the ES module entry
// point: the two differ only in whose BasePersistenceLayer they extend,
// Powertools' CommonJS or ES module build (TypeScript picks the build by
// the file's format), so that the class fits the makeIdempotent the
// application imports in either format.

import { BasePersistenceLayer, IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import type { Client } from './index.js';

export interface DedupdPersistenceLayerOptions {
  /** The @dedupd/client Client the records go through. */
  client: Client;
  /** The dedupd consumer of the records; its policy sets their retention. */
  consumer: string;
  /**
   * The lease in seconds, extended by a heartbeat while the handler runs;
   * unset: the Lambda's remaining time, or 30 s extended by a heartbeat
   * when that is unknown.
   */
  leaseTtl?: number;
  /** Recorded as each claim's owner, for diagnostics (default 'powertools'). */
  owner?: string;
}

/** dedupd as the persistence layer of Powertools' idempotency utility. */
export declare class DedupdPersistenceLayer extends BasePersistenceLayer {
  constructor(options: DedupdPersistenceLayerOptions);
  protected _putRecord(record: IdempotencyRecord): Promise<void>;
  protected _getRecord(idempotencyKey: string): Promise<IdempotencyRecord>;
  protected _updateRecord(record: IdempotencyRecord): Promise<void>;
  protected _deleteRecord(record: IdempotencyRecord): Promise<void>;
}
