'use strict';
// ttlFromPolicy: the TTL a receipt should have, read from dedupd, so that a
// receipt never outlives the record it stands for. The AdminService stub is
// loaded here, on first use, rather than by every Client.

const grpc = require('@grpc/grpc-js');
const path = require('node:path');
const protoLoader = require('@grpc/proto-loader');
const { seconds } = require('./client');
const { ADMIN_FILE, OBJECT_OPTIONS, protoDir } = require('./proto');

let AdminService = null;

function adminService() {
  if (!AdminService) {
    const definition = protoLoader.loadSync(path.join(protoDir(), ADMIN_FILE), { keepCase: false, includeDirs: [protoDir()], ...OBJECT_OPTIONS });
    AdminService = grpc.loadPackageDefinition(definition).dedup.v1.AdminService;
  }
  return AdminService;
}

/**
 * An AdminService stub on client's channel: its credentials, and its bearer
 * token when called through client.call (which adds it).
 */
function adminStub(client) {
  return new (adminService())('unused', grpc.credentials.createInsecure(), { channelOverride: client.stub.getChannel() });
}

/**
 * Reads, once, consumer's retention of completed records (the effective
 * policy, server defaults filled in) over client's connection, in seconds:
 * the ttl for Receipts. It needs the admin service's permission; dedupd's
 * refusals reject as the client's DedupError classes.
 */
async function ttlFromPolicy(client, consumer, callOptions = {}) {
  const resp = await client.call('GetPolicy', { consumer }, adminStub(client), callOptions);
  const ttl = seconds(resp.effective && resp.effective.completedTtl);
  if (!(ttl > 0)) throw new Error(`receipts: ${JSON.stringify(consumer)}'s policy has no completed retention`);
  return ttl;
}

module.exports = { ttlFromPolicy, adminStub };
