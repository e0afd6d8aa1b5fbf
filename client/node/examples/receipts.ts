// A consumer whose effect lives in PostgreSQL, with @dedupd/client/receipts
// on a pg.Pool: the stock change and its receipt commit in one transaction,
// so do() needs no hand-written settle (r.settle reads the receipt). Run
// against a dedupd (DEDUPD_ADDR, default 127.0.0.1:7070) and a database
// (DATABASE_URL). `npm run typecheck` checks it against pg's own
// declarations; the pack-and-install test (scripts/pack-install.js) runs it
// with the installed package and pg.

import assert from 'node:assert/strict';
import { Pool, type PoolClient } from 'pg';
import * as dedupd from '@dedupd/client';
import { Receipts, migrate, type ReceiptEffect } from '@dedupd/client/receipts';

const CONSUMER = 'receipts-example';

async function main(): Promise<void> {
  const pool = new Pool({ connectionString: process.env['DATABASE_URL'] });
  const c = new dedupd.Client(process.env['DEDUPD_ADDR'] ?? '127.0.0.1:7070');
  await migrate(pool); // once per database; idempotent
  await pool.query('CREATE TABLE IF NOT EXISTS stock (item TEXT PRIMARY KEY, qty INT NOT NULL)');
  await pool.query(`INSERT INTO stock (item, qty) VALUES ('apple', 10) ON CONFLICT (item) DO UPDATE SET qty = 10`);

  // ttl: the consumer's completed retention (await ttlFromPolicy(c, CONSUMER) with admin rights).
  const r = new Receipts<PoolClient>({ pool, consumer: CONSUMER, ttl: 24 * 3600, isolation: 'serializable' });
  const take: ReceiptEffect<PoolClient> = async (client, { token }) => {
    const res = await client.query<{ qty: number }>(`UPDATE stock SET qty = qty - 1 WHERE item = 'apple' RETURNING qty`);
    return `apple left=${res.rows[0]?.qty} by token ${token}`;
  };

  const order = `order-${process.pid}-${Date.now()}`;
  const first = await dedupd.do(c, CONSUMER, order, r.effect(take), { settle: r.settle });
  const again = await dedupd.do(c, CONSUMER, order, r.effect(take), { settle: r.settle });
  assert.equal(again.replayed, true);
  assert.equal(again.result.toString(), first.result.toString());
  const receipt = await r.lookup(order);
  assert.equal(receipt?.result.toString(), 'apple left=9 by token 1');
  const { rows } = await pool.query<{ qty: number }>(`SELECT qty FROM stock WHERE item = 'apple'`);
  assert.equal(rows[0]?.qty, 9); // one effect for two deliveries
  const pruned: number = await r.prune(500);
  console.log(`receipts example: ok (${first.result.toString()}; ${pruned} expired receipts pruned)`);
  c.close();
  await pool.end();
}

main().catch((err: unknown) => {
  console.error('receipts example:', err);
  process.exit(1);
});
