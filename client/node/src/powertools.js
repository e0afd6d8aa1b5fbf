'use strict';
// @dedupd/client/powertools: DedupdPersistenceLayer, dedupd as the store of
// Powertools for AWS Lambda's idempotency utility (see powertoolslayer.js),
// built on Powertools' CommonJS build. @aws-lambda-powertools/idempotency
// is an optional peer dependency: install it to use this entry point.

const { BasePersistenceLayer, IdempotencyRecord } = require('@aws-lambda-powertools/idempotency/persistence');
const {
  IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError, IdempotencyRecordStatus,
} = require('@aws-lambda-powertools/idempotency');
const { defineLayer } = require('./powertoolslayer');

const DedupdPersistenceLayer = defineLayer({
  BasePersistenceLayer, IdempotencyRecord, IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError, IdempotencyRecordStatus,
});

module.exports = { DedupdPersistenceLayer };
