'use strict';
// Node client of dedupd: Client wraps every DedupService RPC; do() runs the
// two-phase pattern; reconcile() settles claims whose lease ran out; the
// digest helpers compute the digest spec every dedupd client shares; the
// error classes and Reason (from error_reason.proto) describe refusals.
// index.d.ts declares all of it for TypeScript; every int64 is a decimal
// string.

const { Client, duration, seconds } = require('./client');
// CLASS_BY_REASON stays internal: err instanceof and err.reason are the API.
const { CLASS_BY_REASON, ...errors } = require('./errors');
const digest = require('./digest');
const { doOnce, Terminal } = require('./do');
const { reconcile } = require('./reconcile');
const proto = require('./proto');

module.exports = {
  Client,
  do: doOnce,
  doOnce,
  Terminal,
  reconcile,
  duration,
  seconds,
  digestBytes: digest.digestBytes,
  digestJSON: digest.digestJSON,
  digestJSONText: digest.digestJSONText,
  digestProto: digest.digestProto,
  canonicalJSON: digest.canonicalJSON,
  ...errors,
  proto: { root: proto.root, protoDir: proto.protoDir },
};
