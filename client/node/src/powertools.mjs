// @dedupd/client/powertools as an ES module: the same DedupdPersistenceLayer
// (powertoolslayer.js), built on Powertools' ES module build, so that it
// extends the BasePersistenceLayer an ES module application's
// makeIdempotent and its types know.

import { BasePersistenceLayer, IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import {
  IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError, IdempotencyRecordStatus,
} from '@aws-lambda-powertools/idempotency';
import layer from './powertoolslayer.js';

export const DedupdPersistenceLayer = layer.defineLayer({
  BasePersistenceLayer, IdempotencyRecord, IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError, IdempotencyRecordStatus,
});
