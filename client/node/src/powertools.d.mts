// Declarations of @dedupd/client/powertools for ES modules
// (src/powertools.mjs): src/powertools.d.ts's, extending the
// BasePersistenceLayer of Powertools' ES module build.

import { BasePersistenceLayer, IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import type { DedupdPersistenceLayerOptions } from './powertools.js';

export type { DedupdPersistenceLayerOptions } from './powertools.js';

/** dedupd as the persistence layer of Powertools' idempotency utility. */
export declare class DedupdPersistenceLayer extends BasePersistenceLayer {
  constructor(options: DedupdPersistenceLayerOptions);
  protected _putRecord(record: IdempotencyRecord): Promise<void>;
  protected _getRecord(idempotencyKey: string): Promise<IdempotencyRecord>;
  protected _updateRecord(record: IdempotencyRecord): Promise<void>;
  protected _deleteRecord(record: IdempotencyRecord): Promise<void>;
}
