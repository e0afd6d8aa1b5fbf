// @dedupd/client/powertools from TypeScript (CommonJS), against a running
// dedupd (DEDUPD_ADDR, default 127.0.0.1:7070). `npm run typecheck` checks
// it against src/powertools.d.ts; the pack-and-install test compiles it
// against the installed package and runs it. powertools.mts is the same
// from an ES module. The @ts-expect-error lines must stay errors.

import assert from 'node:assert/strict';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { Client } from '@dedupd/client';
import { DedupdPersistenceLayer } from '@dedupd/client/powertools';
import type { DedupdPersistenceLayerOptions } from '@dedupd/client/powertools';

async function main(): Promise<void> {
  const client = new Client(process.env.DEDUPD_ADDR ?? '127.0.0.1:7070');
  const options: DedupdPersistenceLayerOptions = { client, consumer: 'typed-powertools', leaseTtl: 30, owner: 'typed' };
  // @ts-expect-error: consumer is required
  const missing: DedupdPersistenceLayerOptions = { client };
  void missing;
  let runs = 0;
  const handler = makeIdempotent(async (event: { id: string; amount: number }) => {
    runs += 1;
    return { charged: event.amount };
  }, {
    persistenceStore: new DedupdPersistenceLayer(options),
    config: new IdempotencyConfig({ eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' }),
  });
  const event = { id: `typed-${process.pid}-${Date.now()}`, amount: 5 };
  const first = await handler(event);
  const again = await handler(event);
  assert.deepEqual(again, first);
  assert.equal(runs, 1);
  client.close();
  console.log('typed powertools example: ok');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
