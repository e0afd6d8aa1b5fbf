// Declarations of @dedupd/client/http, the Idempotency-Key middleware for
// node:http and Express-style handlers (src/http.js; docs/gateway.md).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Client } from './index';

/** Whether a request needs an Idempotency-Key. */
export type Need = 'required' | 'optional' | 'off';

/** A rule over the defaults (POST / and PATCH / required); "METHOD /prefix=need" is the same as a string. */
export interface Rule {
  /** An HTTP method, or "*" for every method. */
  method: string;
  /** A path prefix, matched segment by segment ("/orders" covers /orders/7, not /ordersx). */
  pathPrefix: string;
  need: Need;
}

export interface IdempotencyOptions {
  client: Client;
  /** The dedupd consumer whose records hold the keys; its completed_ttl is the retention. */
  consumer: string;
  rules?: Array<Rule | string>;
  /** Seconds a retry waits for the first request's outcome before 409 (default 10; 0: answer at once). */
  wait?: number;
  /** Largest stored response body (default 1 MiB); a larger one passes through and its key answers 409. */
  maxStoredResponseBytes?: number;
  /** Largest body of a keyed request (default 1 MiB); a larger one gets 413 before the handler runs. */
  maxRequestBytes?: number;
  /** Lease of a first request in seconds (default 30), extended while the handler runs. */
  leaseTtl?: number;
  /** Seconds the handler may take on a keyed request (default 60). */
  timeout?: number;
  /** What a 5xx does to its key: release (default: the retry runs again), store, or keep (409 until the lease runs out). */
  on5xx?: 'release' | 'store' | 'keep';
  /** Header whose hash scopes the keys (default authorization). */
  identityHeader?: string;
  /** Request headers added to the fingerprint. */
  fingerprintHeaders?: string[];
  keyHeader?: string;
  fencingHeader?: string;
  replayedHeader?: string;
  retentionHeader?: string;
  /** Prefix of the problem type URIs (default the anchors of docs/gateway.md). */
  problemBase?: string;
}

/** The request a handler behind the middleware gets: the keyed body, read whole. */
export interface IdempotentRequest extends IncomingMessage {
  rawBody?: Buffer;
  body?: unknown;
}

export type NextFunction = (err?: unknown) => void;

export interface IdempotencyMiddleware {
  (req: IncomingMessage, res: ServerResponse, next: NextFunction): void;
  /** A node:http request listener running handler behind the middleware. */
  wrap(handler: (req: IdempotentRequest, res: ServerResponse) => void | Promise<void>): (req: IncomingMessage, res: ServerResponse) => void;
}

export function idempotency(options: IdempotencyOptions): IdempotencyMiddleware;

/** The key of an Idempotency-Key value (a structured-field String or a bare token); throws on a bad one. */
export function parseKey(value: string | string[]): string;

export function parseRule(rule: Rule | string): Rule;

/** The rejection reason of a key whose first response was too large to store. */
export const REASON_NOT_STORED: 'HTTP_RESPONSE_NOT_STORED';
