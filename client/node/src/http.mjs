// The ES module face of @dedupd/client/http; http.js is the implementation.
import http from './http.js';

export default http;
export const { idempotency, parseKey, parseRule, REASON_NOT_STORED } = http;
