// @dedupd/client/http used from TypeScript: `npm run typecheck` checks it
// against src/http.d.ts (tsc --noEmit). The @ts-expect-error lines must
// stay errors: they check that the options are typed.

import * as http from 'node:http';
import { Client } from '@dedupd/client';
import { idempotency, parseKey, parseRule, REASON_NOT_STORED } from '@dedupd/client/http';
import type { IdempotencyMiddleware, IdempotencyOptions, IdempotentRequest, Rule } from '@dedupd/client/http';

export function orderServer(addr: string): http.Server {
  const rules: Array<Rule | string> = ['POST /webhooks=optional', { method: 'PUT', pathPrefix: '/orders', need: 'required' }];
  const options: IdempotencyOptions = {
    client: new Client(addr), consumer: 'orders', rules, wait: 10, maxStoredResponseBytes: 1 << 20, on5xx: 'release',
    fingerprintHeaders: ['x-currency'],
  };
  // @ts-expect-error: on5xx is one of release, store, keep
  const wrong: IdempotencyOptions = { ...options, on5xx: 'retry' };
  void wrong;
  const mw: IdempotencyMiddleware = idempotency(options);
  const key: string = parseKey('"a1"');
  const rule: Rule = parseRule('PATCH /=off');
  const reason: 'HTTP_RESPONSE_NOT_STORED' = REASON_NOT_STORED;
  void key; void rule; void reason;
  return http.createServer(mw.wrap((req: IdempotentRequest, res) => {
    const body: Buffer | undefined = req.rawBody;
    res.writeHead(201, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ bytes: body ? body.length : 0 }));
  }));
}
