'use strict';
// The dedup.v1 protos, loaded at run time from the repository's proto/
// directory (the one source of truth; `npm pack` carries a copy, made by
// scripts/copy-protos.js), once for gRPC (proto-loader) and once as
// protobufjs types for the stored records that errors carry and for
// protobuf digests; and the ErrorInfo reasons from error_reason.proto.

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

/** The directory holding dedup/v1/*.proto: a packed copy, else the repo's. */
function protoDir() {
  const packed = path.join(__dirname, '..', 'proto');
  if (fs.existsSync(path.join(packed, 'dedup', 'v1', 'dedup.proto'))) return packed;
  return path.join(__dirname, '..', '..', '..', 'proto');
}

// The files under protoDir() the client loads; PROTO_FILES lists them for
// the package (scripts/copy-protos.js) and its tests.
const DEDUP_FILE = 'dedup/v1/dedup.proto';
const ERROR_REASON_FILE = 'dedup/v1/error_reason.proto';
const STREAM_FILE = 'dedup/v1/stream.proto';
// dedup.proto imports it for the per-item errors of batch calls.
const STATUS_FILE = 'google/rpc/status.proto';
// dedup.proto and stream.proto import it for the facts each RPC declares
// about itself (option (dedup.v1.rpc_facts)), which the server reads; its
// own import, google/protobuf/descriptor.proto, comes with protobufjs.
const OPTIONS_FILE = 'dedup/v1/options.proto';
// The receipts helper reads a consumer's policy from it (ttlFromPolicy).
const ADMIN_FILE = 'dedup/v1/admin.proto';
const PROTO_FILES = [DEDUP_FILE, ERROR_REASON_FILE, STREAM_FILE, STATUS_FILE, OPTIONS_FILE, ADMIN_FILE];

/**
 * How messages look in JavaScript, for gRPC calls and decoded details alike.
 * Every int64 (fencing tokens, attempts, Timestamp and Duration seconds) is
 * a decimal string: a JavaScript number loses integers past 2^53, and
 * proto-loader has no BigInt option.
 */
const OBJECT_OPTIONS = { longs: String, enums: String, bytes: Buffer, defaults: true, oneofs: true };

const DEDUP_PROTO = path.join(protoDir(), DEDUP_FILE);

const packageDefinition = protoLoader.loadSync(DEDUP_PROTO, {
  keepCase: false,
  includeDirs: [protoDir()],
  ...OBJECT_OPTIONS,
});
const { DedupService } = grpc.loadPackageDefinition(packageDefinition).dedup.v1;

// StreamService (stream.proto, which imports dedup.proto), loaded the same way.
const STREAM_PROTO = path.join(protoDir(), STREAM_FILE);
const { StreamService } = grpc.loadPackageDefinition(protoLoader.loadSync(STREAM_PROTO, {
  keepCase: false,
  includeDirs: [protoDir()],
  ...OBJECT_OPTIONS,
})).dedup.v1;

// The ErrorInfo reasons dedupd sends, from the one list every language
// reads: enum dedup.v1.ErrorReason, whose value names are the wire strings.
const reasonEnum = protoLoader.loadSync(path.join(protoDir(), ERROR_REASON_FILE), {
  includeDirs: [protoDir()],
})['dedup.v1.ErrorReason'];
/** Every reason dedupd can send, in enum order (the UNSPECIFIED zero value is never sent). */
const REASONS = Object.freeze(reasonEnum.type.value.map((v) => v.name).filter((name) => name !== 'ERROR_REASON_UNSPECIFIED'));

/** protobufjs types of dedup.v1, e.g. root.lookupType('dedup.v1.ClaimRequest'). */
// Imports (dedup.proto's google/rpc/status.proto, stream.proto's
// dedup/v1/dedup.proto) resolve from the proto directory, as protoc's -I does.
const root = new protobuf.Root();
root.resolvePath = (origin, target) => (path.isAbsolute(target) ? target : path.join(protoDir(), target));
root.loadSync([DEDUP_FILE, STREAM_FILE]);

// google.rpc.Status and ErrorInfo, wire-compatible with googleapis' protos,
// declared here so that no googleapis package is needed. Any is a plain
// message here on purpose: protobufjs would otherwise try to unpack it.
const rpcRoot = protobuf.Root.fromJSON({
  nested: {
    dedupd_private: {
      nested: {
        Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
        Status: {
          fields: {
            code: { type: 'int32', id: 1 },
            message: { type: 'string', id: 2 },
            details: { rule: 'repeated', type: 'Any', id: 3 },
          },
        },
        ErrorInfo: {
          fields: {
            reason: { type: 'string', id: 1 },
            domain: { type: 'string', id: 2 },
            metadata: { keyType: 'string', type: 'string', id: 3 },
          },
        },
      },
    },
  },
});

module.exports = {
  DedupService,
  StreamService,
  root,
  Record: root.lookupType('dedup.v1.Record'),
  Stream: root.lookupType('dedup.v1.Stream'),
  Status: rpcRoot.lookupType('dedupd_private.Status'),
  ErrorInfo: rpcRoot.lookupType('dedupd_private.ErrorInfo'),
  OBJECT_OPTIONS,
  REASONS,
  PROTO_FILES,
  ADMIN_FILE,
  protoDir,
};
