// The ES module face of the package: import { Client } from '@dedupd/client'.
// The CommonJS build (index.js) is the one implementation; this file
// re-exports its values by name, so that an ESM importer and a require() in
// one process share the same classes (instanceof holds across both).
// test/esm.test.js checks that the names here are exactly index.js's.

import dedupd from './index.js';

export default dedupd;

export const {
  Client, doOnce, doBatch, Terminal, reconcile, doInOrder, doParked, StreamRejected, duration,
  seconds, digestBytes, digestJSON, digestJSONText, digestProto, canonicalJSON,
  ERROR_DOMAIN, Reason, DedupError, DigestMismatch, LeaseLost, AlreadyFinished,
  RecordNotFound, InvalidRequest, Unavailable, Unauthenticated, PermissionDenied,
  InProgressTimeout, Rejected, AbortError, SequenceGap, StreamModeMismatch, StreamNotFound,
  ParkFull, ParkUnsupported, fromServiceError, proto,
} = dedupd;

// do is a reserved word: it cannot be a binding, only an export name.
const doOnceAlias = dedupd.do;
export { doOnceAlias as do };
