'use strict';
// Node client of dedupd: Client wraps every DedupService RPC and the
// StreamService ones; do() runs the two-phase pattern, doBatch() the same
// for a whole poll in one claimBatch and one finishBatch, doInOrder() for a
// stream's sequenced events (park: true parks an early event in dedupd and
// runs the parked ones as they come back; doParked() picks up what a crash
// left); reconcile() settles claims whose lease ran out; the
// digest helpers compute the digest spec every dedupd client shares; the
// error classes and Reason (from error_reason.proto) describe refusals.
// index.d.ts declares all of it for TypeScript; every int64 is a decimal
// string.

const { Client, duration, seconds } = require('./client');
// CLASS_BY_REASON and fromStatus stay internal: err instanceof and
// err.reason are the API.
const { CLASS_BY_REASON, fromStatus, ...errors } = require('./errors');
const digest = require('./digest');
const { doOnce, Terminal } = require('./do');
const { doBatch } = require('./dobatch');
const { reconcile } = require('./reconcile');
const { doInOrder, StreamRejected } = require('./inorder');
const { doParked } = require('./park');
const proto = require('./proto');

module.exports = {
  Client,
  do: doOnce,
  doOnce,
  doBatch,
  Terminal,
  reconcile,
  doInOrder,
  doParked,
  StreamRejected,
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
