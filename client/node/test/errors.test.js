'use strict';
// ErrorInfo reasons: the client reads them from proto/dedup/v1/error_reason.proto,
// the list the server sends from, and has a class for every one. The oracle
// for the list is the proto text itself, read here with a regular
// expression rather than through proto-loader as the client does.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, it } = require('node:test');
const grpc = require('@grpc/grpc-js');

const dedupd = require('../src');
const { CLASS_BY_REASON, fromServiceError } = require('../src/errors');
const { Status, ErrorInfo, PROTO_FILES, protoDir } = require('../src/proto');

const REPO_PROTO = path.resolve(__dirname, '..', '..', '..', 'proto');

/** The value names of enum ErrorReason, from the proto text. */
function reasonsInProto(dir) {
  const text = fs.readFileSync(path.join(dir, 'dedup', 'v1', 'error_reason.proto'), 'utf8');
  const body = /enum ErrorReason \{([^}]*)\}/.exec(text)[1].replace(/\/\/.*$/gm, '');
  return [...body.matchAll(/^\s*([A-Z][A-Z0-9_]*)\s*=\s*\d+\s*;/gm)].map((m) => m[1])
    .filter((name) => name !== 'ERROR_REASON_UNSPECIFIED');
}

/** A grpc-js ServiceError as dedupd sends it: code, message, ErrorInfo in the status details. */
function serviceError(code, reason, domain = dedupd.ERROR_DOMAIN) {
  const info = ErrorInfo.encode({ reason, domain, metadata: { field: 'key' } }).finish();
  const status = Status.encode({
    code, message: 'boom', details: [{ typeUrl: 'type.googleapis.com/google.rpc.ErrorInfo', value: info }],
  }).finish();
  const metadata = new grpc.Metadata();
  metadata.set('grpc-status-details-bin', Buffer.from(status));
  return Object.assign(new Error(`${code} boom`), { code, details: 'boom', metadata });
}

describe('ErrorInfo reasons', () => {
  it('are read from the repository proto the server sends from', () => {
    const names = reasonsInProto(REPO_PROTO);
    assert.ok(names.length >= 15, `only ${names.length} reasons parsed`);
    assert.deepEqual(Object.keys(dedupd.Reason), names);
    for (const name of names) assert.equal(dedupd.Reason[name], name); // the name is the wire string
  });

  it('loads the same proto files the repository has (a packed copy must be current)', () => {
    for (const file of PROTO_FILES) {
      assert.equal(fs.readFileSync(path.join(protoDir(), file), 'utf8'), fs.readFileSync(path.join(REPO_PROTO, file), 'utf8'), file);
    }
  });

  it('are the ErrorReason union of the TypeScript declarations', () => {
    const dts = fs.readFileSync(path.join(__dirname, '..', 'src', 'index.d.ts'), 'utf8');
    const union = /export type ErrorReason =([^;]*);/.exec(dts)[1];
    assert.deepEqual([...union.matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]), reasonsInProto(REPO_PROTO),
      'update export type ErrorReason in src/index.d.ts');
  });

  it('include every reason the server\'s Go code names', () => {
    // The server's reasons, written either as string constants
    // (ReasonLeaseLost = "LEASE_LOST") or through the generated enum
    // (dedupv1.ErrorReason_LEASE_LOST); a reason there that the client
    // lacks fails here, whichever list it was added to.
    const server = new Set();
    const walk = (dir) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (entry.name.endsWith('.go') && !entry.name.endsWith('_test.go')) {
          const text = fs.readFileSync(file, 'utf8');
          for (const m of text.matchAll(/\bReason[A-Z]\w*\s*=\s*"([A-Z][A-Z0-9_]*)"|\bErrorReason_([A-Z][A-Z0-9_]*)\b/g)) server.add(m[1] || m[2]);
        }
      }
    };
    walk(path.resolve(__dirname, '..', '..', '..', 'server'));
    server.delete('ERROR_REASON_UNSPECIFIED');
    assert.ok(server.size >= 10, `found only ${[...server]} in server/`);
    assert.deepEqual([...server].filter((name) => !(name in dedupd.Reason)), []);
  });

  it('has a class for every reason the server can send', () => {
    const missing = reasonsInProto(REPO_PROTO).filter((name) => !Object.hasOwn(CLASS_BY_REASON, name));
    assert.deepEqual(missing, [], 'map these reasons in src/errors.js CLASS_BY_REASON');
  });

  it('turns each reason into its class, with reason, code and metadata', () => {
    for (const reason of Object.keys(dedupd.Reason)) {
      const err = fromServiceError(serviceError(grpc.status.FAILED_PRECONDITION, reason));
      assert.ok(err instanceof CLASS_BY_REASON[reason], `${reason}: ${err.name}`);
      assert.ok(err instanceof dedupd.DedupError);
      assert.equal(err.reason, reason);
      assert.equal(err.code, grpc.status.FAILED_PRECONDITION);
      assert.deepEqual(err.metadata, { field: 'key' });
    }
    assert.ok(fromServiceError(serviceError(grpc.status.ABORTED, 'LEASE_LOST')) instanceof dedupd.LeaseLost);
    assert.ok(fromServiceError(serviceError(grpc.status.INVALID_ARGUMENT, 'INVALID_FIELD')) instanceof dedupd.InvalidRequest);
  });

  it('falls back to the code for an unknown reason or another domain', () => {
    const newer = fromServiceError(serviceError(grpc.status.UNAVAILABLE, 'SOME_FUTURE_REASON'));
    assert.ok(newer instanceof dedupd.Unavailable);
    assert.equal(newer.reason, 'SOME_FUTURE_REASON');
    const foreign = fromServiceError(serviceError(grpc.status.ABORTED, 'LEASE_LOST', 'example.com'));
    assert.equal(foreign.constructor, dedupd.DedupError);
    assert.equal(foreign.reason, '');
  });
});
