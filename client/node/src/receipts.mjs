// The ES module face of @dedupd/client/receipts. The CommonJS build
// (receipts.js) is the one implementation; this file re-exports its values
// by name, so that an ESM importer and a require() in one process share the
// same classes (instanceof StaleReceipt holds across both).

import receipts from './receipts.js';

export default receipts;

export const {
  Receipts, migrate, ttlFromPolicy, StaleReceipt, UnknownOutcome,
  DEFAULT_TABLE, SCHEMA_VERSION, DEFAULT_MAX_ATTEMPTS, ISOLATION_LEVELS,
} = receipts;
