// Every export of @dedupd/client used from TypeScript, against a running
// dedupd (DEDUPD_ADDR, default 127.0.0.1:7070). `npm run typecheck` checks
// it against src/index.d.ts (tsc --noEmit); the pack-and-install test
// (scripts/pack-install.js) also compiles it against the installed package
// and runs it, so that the declarations and what the code returns agree.
// The @ts-expect-error lines must stay errors: they are the checks that
// int64 fields are strings and that the options are typed.

import assert from 'node:assert/strict';
import * as dedupd from '@dedupd/client';
import type {
  BatchOutcome, BatchWork, CallOptions, ClaimBatchItem, ClaimOptions, ClaimResponse, ClientOptions, DoBatchOptions,
  ExtendLeaseBatchItem, FinishBatchItem, ItemResult, Decide, Decision, DedupErrorOptions, DedupRecord, DoOptions,
  DoResult, Duration, ErrorReason, ExtendLeaseOptions, FencingToken, Int64, JSONValue, ListRecordsFilters,
  ListRecordsResponse, Outcome, Payload, ReconcileOptions, Rejection, RejectOptions, Settled, State,
  TimeInput, Timestamp, TlsOptions, Work, Settle, BatchSettle, InOrderSettle,
  ClaimStreamOptions, ClaimStreamResponse, DedupStream, InOrderOptions, InOrderResult, InOrderWork,
  ListStreamsFilters, ListStreamsResponse, RejectStreamOptions, StreamMode, StreamOutcome,
  ParkedEvent, StreamFinishResponse, NextLeaseOptions, ClaimParkedOptions, ClaimParkedResponse, ListParkedResponse,
  ParkedWork, ParkedSettle, ReleasedChain, DoParkedOptions, DoParkedResult,
} from '@dedupd/client';
import * as receipts from '@dedupd/client/receipts';
import type { EffectInfo, IsolationLevel, Receipt, ReceiptEffect, ReceiptPool, ReceiptsOptions } from '@dedupd/client/receipts';

const CONSUMER = 'typed-example';

/** Every constructor option type-checks; none of these connects until called. */
function clients(addr: string): dedupd.Client[] {
  const tls: TlsOptions = { rootCerts: Buffer.from('ca pem'), certChain: null, privateKey: null };
  const options: ClientOptions = { tls, token: 'tok', timeout: null, channelOptions: { 'grpc.max_receive_message_length': 4 << 20 } };
  // @ts-expect-error: the timeout is seconds as a number
  const wrong: ClientOptions = { timeout: '30s' };
  void wrong;
  return [new dedupd.Client(addr, { token: '' }), new dedupd.Client('dedupd.example:7070', options),
    new dedupd.Client(addr, { tls: true, token: null })];
}

async function lowLevel(c: dedupd.Client, key: string): Promise<DedupRecord> {
  const digest: Buffer = dedupd.digestJSON({ event: key, qty: 3, tags: ['a', null, true] });
  const claimOptions: ClaimOptions = { digest, leaseTtl: 30, owner: 'typed' };
  const claim: ClaimResponse = await c.claim(CONSUMER, key, claimOptions);
  const outcome: Outcome = claim.outcome;
  assert.equal(outcome, 'OUTCOME_ACQUIRED');
  const token: Int64 = claim.fencingToken;
  assert.equal(typeof token, 'string');
  // @ts-expect-error: a fencing token is a decimal string, never a number
  const asNumber: number = claim.fencingToken;
  void asNumber;
  const next: FencingToken = BigInt(token); // a bigint is taken as well
  const extendOptions: ExtendLeaseOptions = { leaseTtl: 60 };
  const extended: DedupRecord = await c.extendLease(CONSUMER, key, next, extendOptions);
  const expires: Timestamp | null = extended.leaseExpiresAt;
  assert.ok(expires !== null && typeof expires.seconds === 'string');
  // @ts-expect-error: a token is not an object
  await c.complete(CONSUMER, key, { token }).catch(() => null);
  const result: Payload = Buffer.from('stock=97');
  const done: DedupRecord = await c.complete(CONSUMER, key, token, result);
  const state: State = done.state;
  assert.equal(state, 'STATE_COMPLETED');
  const again: DedupRecord = await c.lookup(CONSUMER, key);
  assert.equal(again.result.toString(), 'stock=97');
  return again;
}

async function rejections(c: dedupd.Client, key: string): Promise<void> {
  const { fencingToken } = await c.claim(CONSUMER, key);
  const release: RejectOptions = { reason: 'TIMEOUT', message: 'try again', retryable: true };
  await c.reject(CONSUMER, key, fencingToken, release);
  const busy = await c.claim(CONSUMER, key, { leaseTtl: 30 });
  const refuse: RejectOptions = { reason: 'OUT_OF_STOCK', message: '3 > 2', detail: 'sku-1' };
  const stored: DedupRecord = await c.reject(CONSUMER, key, busy.fencingToken, refuse);
  const rejection: Rejection | null = stored.rejection;
  assert.equal(rejection?.reason, 'OUT_OF_STOCK');
  assert.equal(typeof stored.attempts, 'string');
}

async function listing(c: dedupd.Client, prefix: string): Promise<number> {
  const after: TimeInput = { seconds: Math.floor(Date.now() / 1000) - 3600 };
  const filters: ListRecordsFilters = {
    states: ['STATE_COMPLETED', 'STATE_REJECTED'], keyPrefix: prefix, createdAfter: after, createdBefore: { seconds: '99999999999' },
    updatedAfter: { seconds: 0n, nanos: 0 }, updatedBefore: { seconds: 99999999999 }, leaseExpired: false, pageSize: 10, pageToken: '',
  };
  const page: ListRecordsResponse = await c.listRecords(CONSUMER, filters);
  let n = 0;
  for await (const rec of c.iterRecords(CONSUMER, { ...filters, pageSize: 1 })) {
    const created: Timestamp | null = rec.createdAt;
    assert.ok(created);
    n++;
  }
  assert.equal(n, page.records.length);
  return n;
}

async function twoPhase(c: dedupd.Client, key: string): Promise<DoResult> {
  const work: Work = async (token, attempt, signal, record) => {
    assert.equal(typeof token, 'string');
    assert.equal(attempt, '1');
    assert.ok(!signal.aborted);
    assert.equal(record.key, key);
    return 'done';
  };
  // Not called here: the first acquisition has attempt 1.
  const settle: Settle = async (_token, _attempt, _signal, record) => (record.key === key ? null : 'found');
  const cancel = new AbortController();
  const options: DoOptions = {
    digest: dedupd.digestBytes(key), leaseTtl: 10, owner: 'typed', maxWait: 5, initialBackoff: 0.01, maxBackoff: 0.5, heartbeatEvery: 3,
    settle, signal: cancel.signal,
  };
  const first: DoResult = await dedupd.do(c, CONSUMER, key, work, options);
  const replay = await dedupd.doOnce(c, CONSUMER, key, work, options);
  assert.ok(!first.replayed && replay.replayed && !first.settled);
  const refused = await dedupd.do(c, CONSUMER, `${key}-terminal`, () => {
    throw new dedupd.Terminal('OUT_OF_STOCK', 'none left', Buffer.from([1]));
  }).catch((err: unknown) => err);
  assert.ok(refused instanceof dedupd.Rejected);
  const rejection: Rejection = refused.rejection;
  assert.equal(rejection.reason, 'OUT_OF_STOCK');
  assert.equal(refused.replayed, false);
  return first;
}

async function reconciling(c: dedupd.Client, key: string): Promise<Settled[]> {
  await c.claim(CONSUMER, key, { leaseTtl: 0.05, owner: 'crashed' });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const decide: Decide = async (record, token) => {
    assert.equal(typeof token, 'string');
    const decisions: Decision[] = [
      { complete: 'stock=94' }, { reject: { reason: 'GONE', message: 'item withdrawn', detail: Buffer.alloc(0) } }, { release: {} },
    ];
    return record.key === key ? decisions[2] : { release: { reason: 'NOT_MINE' } };
  };
  const options: ReconcileOptions = { leaseTtl: 30, owner: 'reconciler', pageSize: 50 };
  const settled: Settled[] = await dedupd.reconcile(c, CONSUMER, decide, options);
  assert.ok(settled.some((s) => s.key === key && s.decision !== null && s.record.state === 'STATE_RELEASED'));
  // The same settle function do() takes: the effect was found, so complete.
  await c.claim(CONSUMER, `${key}-s`, { leaseTtl: 0.05, owner: 'crashed' });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const settle: Settle = (token, attempt, signal, record) => (record.key === `${key}-s` && !signal.aborted ? `charge/${attempt}` : null);
  const bySettle: Settled[] = await dedupd.reconcile(c, CONSUMER, { settle }, options);
  assert.ok(bySettle.some((s) => s.key === `${key}-s` && s.record.result.toString() === 'charge/2'));
  return settled;
}

/**
 * The receipts helper's API, typed (examples/receipts.ts runs it on a real
 * pg.Pool). Nothing here reaches a database: the pool is never called, and
 * the checks are the ones made before any query.
 */
async function receiptsApi(c: dedupd.Client, key: string): Promise<void> {
  const pool: ReceiptPool = {
    query: async () => { throw new Error('not called'); },
    connect: async () => { throw new Error('not called'); },
  };
  const isolation: IsolationLevel = 'serializable';
  const options: ReceiptsOptions = { pool, consumer: CONSUMER, ttl: 24 * 3600, isolation, maxAttempts: 5, now: () => new Date() };
  // @ts-expect-error: ttl is seconds as a number
  const wrong: ReceiptsOptions = { pool, consumer: CONSUMER, ttl: '24h' };
  void wrong;
  const r = new receipts.Receipts(options);
  assert.equal(r.table, receipts.DEFAULT_TABLE);
  assert.equal(receipts.SCHEMA_VERSION, 1);
  const effect: ReceiptEffect = async (client, info: EffectInfo) => {
    await client.query('UPDATE stock SET qty = qty - 1 WHERE item = $1', [info.key]);
    return `taken/${info.token}`;
  };
  const fn: Work = r.effect(effect);
  const settle: Settle = r.settle;
  const doOptions: DoOptions = { settle, leaseTtl: 30 };
  const batchFn: BatchWork = r.batchEffect(effect);
  const batchOptions: DoBatchOptions = { settle: r.settle };
  void [fn, doOptions, batchFn, batchOptions];
  const lookup: (key: string) => Promise<Receipt | null> = (k) => r.lookup(k);
  const prune: (batch?: number) => Promise<number> = (batch) => r.prune(batch);
  void [lookup, prune];
  // Bad input is refused before the database is asked.
  await assert.rejects(r.run(key, 0, effect), TypeError);
  // @ts-expect-error: a token is an Int64 string, a bigint or a number
  await assert.rejects(r.run(key, { token: 1 }, effect), TypeError);
  assert.throws(() => new receipts.Receipts({ ...options, table: 'a b' }), TypeError);
  const stale: Error = new receipts.StaleReceipt(CONSUMER, key);
  assert.ok(stale instanceof Error);
  const ttl: Promise<number> = receipts.ttlFromPolicy(c, CONSUMER);
  await ttl.catch(() => undefined); // the typed example's dedupd may refuse or have no policy: only the type matters
}

function errors(record: DedupRecord): void {
  const reason: ErrorReason = dedupd.Reason.DIGEST_MISMATCH;
  assert.equal(reason, 'DIGEST_MISMATCH');
  assert.equal(dedupd.ERROR_DOMAIN, 'dedup.v1');
  const options: DedupErrorOptions = { code: 9, reason, metadata: {}, record, cause: new Error('x') };
  const all: dedupd.DedupError[] = [
    new dedupd.DedupError('m', options), new dedupd.DigestMismatch('m', options), new dedupd.LeaseLost('m'),
    new dedupd.AlreadyFinished('m'), new dedupd.RecordNotFound('m'), new dedupd.InvalidRequest('m', { metadata: { field: 'key' } }),
    new dedupd.Unavailable('m'), new dedupd.Unauthenticated('m'), new dedupd.PermissionDenied('m'),
    new dedupd.InProgressTimeout('m', { record }), new dedupd.Rejected({ ...record, rejection: { reason: 'R', message: '', detail: Buffer.alloc(0), retryable: false } }, true),
  ];
  for (const err of all) assert.ok(err instanceof Error && typeof err.reason === 'string');
  // @ts-expect-error: there is no such reason
  const bogus: ErrorReason = 'NO_SUCH_REASON';
  void bogus;
}

async function typedErrors(c: dedupd.Client, key: string): Promise<void> {
  const err: unknown = await c.claim(CONSUMER, key, { digest: dedupd.digestBytes('other content') }).catch((e: unknown) => e);
  if (!(err instanceof dedupd.DigestMismatch)) throw err;
  const stored: DedupRecord | null = err.record;
  assert.equal(err.reason, dedupd.Reason.DIGEST_MISMATCH);
  assert.equal(err.code, 9); // FAILED_PRECONDITION
  assert.ok(stored && stored.key === key);
  const missing = await c.lookup(CONSUMER, `${key}-absent`).catch((e: unknown) => e);
  assert.ok(missing instanceof dedupd.RecordNotFound && missing.reason === 'RECORD_NOT_FOUND');
  const bad = await c.claim(CONSUMER, '').catch((e: unknown) => e);
  assert.ok(bad instanceof dedupd.InvalidRequest && bad.metadata['field'] === 'key');
  const service = Object.assign(new Error('14 UNAVAILABLE: gone'), { code: 14, details: 'gone', metadata: new (await import('@grpc/grpc-js')).Metadata() });
  assert.ok(dedupd.fromServiceError(service) instanceof dedupd.Unavailable);
}

/** Per-call options: a deadline (Date or epoch milliseconds) and an AbortSignal on any method. */
async function callOptions(c: dedupd.Client, key: string): Promise<void> {
  const soon: CallOptions = { deadline: new Date(Date.now() + 10_000), signal: new AbortController().signal };
  const claimed: ClaimResponse = await c.claim(CONSUMER, key, { leaseTtl: 30, ...soon });
  await c.complete(CONSUMER, key, claimed.fencingToken, 'done', { deadline: Date.now() + 10_000 });
  const past = await c.lookup(CONSUMER, key, { deadline: Date.now() - 1000 }).catch((e: unknown) => e);
  assert.ok(past instanceof dedupd.DedupError && past.code === 4); // DEADLINE_EXCEEDED
  const aborted = await c.lookup(CONSUMER, key, { signal: AbortSignal.abort() }).catch((e: unknown) => e);
  assert.ok(aborted instanceof dedupd.AbortError && aborted.name === 'AbortError');
  // @ts-expect-error: the deadline is a Date or milliseconds, not a duration string
  await c.lookup(CONSUMER, key, { deadline: '5s' }).catch(() => null);
}

function digests(): void {
  const value: JSONValue = { b: [1, 2.5, 'x'], a: { nested: null } };
  assert.equal(dedupd.canonicalJSON(value).toString(), '{"a":{"nested":null},"b":[1,2.5,"x"]}');
  assert.deepEqual(dedupd.digestJSONText('{"b":[1,2.5,"x"],"a":{"nested":null}}'), dedupd.digestJSON(value));
  const type = dedupd.proto.root.lookupType('dedup.v1.ClaimRequest');
  assert.equal(dedupd.digestProto(type, { consumer: 'c', key: 'k' }).length, 33);
  assert.ok(dedupd.proto.protoDir().length > 0);
  const d: Duration = { seconds: '1', nanos: 500_000_000 };
  assert.equal(dedupd.seconds(d), 1.5);
  assert.deepEqual(dedupd.duration(1.5), { seconds: 1, nanos: 500_000_000 });
  assert.equal(dedupd.duration(undefined), null);
}

/** A stream claimed in order, a duplicate skipped, a gap refused; doInOrder; a poison event. */
async function streams(c: dedupd.Client, stream: string): Promise<DedupStream> {
  const mode: StreamMode = 'STREAM_MODE_DENSE';
  const options: ClaimStreamOptions = { leaseTtl: 30, owner: 'typed', mode };
  const first: ClaimStreamResponse = await c.claimStream(CONSUMER, stream, 1, options);
  const outcome: StreamOutcome = first.outcome;
  assert.equal(outcome, 'STREAM_OUTCOME_ACQUIRED');
  const done: DedupStream = await c.completeStream(CONSUMER, stream, 1, first.fencingToken);
  assert.equal(done.highWater, '1');
  assert.equal((await c.claimStream(CONSUMER, stream, 1)).outcome, 'STREAM_OUTCOME_DUPLICATE');
  const gap = await c.claimStream(CONSUMER, stream, 3).catch((e: unknown) => e);
  assert.ok(gap instanceof dedupd.SequenceGap && gap.expected === '2' && gap.stream?.highWater === '1');
  const work: InOrderWork = async (token, attempt, signal, st) => {
    assert.ok(BigInt(token) > 0n && attempt === null && !signal.aborted && st.inFlight === '2');
  };
  const settleStream: InOrderSettle = (_token, _attempt, _signal, st) => (st.inFlight === '2' ? null : 'applied');
  const inOrder: InOrderOptions = { leaseTtl: 30, maxWait: 5, settle: settleStream, signal: null };
  const res: InOrderResult = await dedupd.doInOrder(c, CONSUMER, stream, 2, work, inOrder);
  assert.equal(res.duplicate, false);
  assert.equal(res.settled, false);
  const poison = await dedupd.doInOrder(c, CONSUMER, stream, 3, () => { throw new dedupd.Terminal('BAD', 'poison'); })
    .catch((e: unknown) => e);
  assert.ok(poison instanceof dedupd.StreamRejected && poison.stream?.lastRejection?.reason === 'BAD');
  const held = await c.claimStream(CONSUMER, stream, 4);
  await c.releaseStream(CONSUMER, stream, 4, held.fencingToken);
  const again = await c.claimStream(CONSUMER, stream, 4);
  const rejectOptions: RejectStreamOptions = { reason: 'BAD', message: 'also poison', detail: 'x' };
  await c.rejectStream(CONSUMER, stream, 4, again.fencingToken, rejectOptions);
  const missing = await c.getStream(CONSUMER, `${stream}-absent`).catch((e: unknown) => e);
  assert.ok(missing instanceof dedupd.StreamNotFound);
  const versions = await c.claimStream(CONSUMER, `${stream}-v`, 10, { mode: 'STREAM_MODE_VERSIONS' });
  assert.equal(versions.stream.mode, 'STREAM_MODE_VERSIONS');
  const mismatch = await c.claimStream(CONSUMER, `${stream}-v`, 11, { mode }).catch((e: unknown) => e);
  assert.ok(mismatch instanceof dedupd.StreamModeMismatch);
  const filters: ListStreamsFilters = { pageSize: 10 };
  const page: ListStreamsResponse = await c.listStreams(CONSUMER, filters);
  assert.ok(page.streams.length > 0);
  return c.getStream(CONSUMER, stream);
}

/** Park mode: 3 and 2 parked, 1 runs them in order; the calls by hand; a pickup with nothing ready. */
async function parking(c: dedupd.Client, stream: string): Promise<ReleasedChain> {
  const seen: string[] = [];
  const released: ParkedWork = (event, signal, st) => {
    assert.ok(!signal.aborted && st.inFlight === event.sequence);
    seen.push(`${event.sequence}:${event.payload.toString()}`);
  };
  const settleReleased: ParkedSettle = () => null;
  const options = (seq: number): InOrderOptions => ({ park: true, payload: `e${seq}`, released, settleReleased, leaseTtl: 30 });
  for (const seq of [3, 2]) assert.equal((await dedupd.doInOrder(c, CONSUMER, stream, seq, () => {}, options(seq))).parked, true);
  const res: InOrderResult = await dedupd.doInOrder(c, CONSUMER, stream, 1, () => {}, options(1));
  assert.deepEqual([res.released, seen, res.unfinished], [['2', '3'], ['2:e2', '3:e3'], null]);
  const hand = `${stream}-hand`;
  const claimOptions: ClaimStreamOptions = { park: true, payload: 'two' };
  assert.equal((await c.claimStream(CONSUMER, hand, 2, claimOptions)).outcome, 'STREAM_OUTCOME_PARKED');
  const page: ListParkedResponse = await c.listParked(CONSUMER, hand, { pageSize: 10 });
  assert.equal(page.events[0].payloadBytes, '3');
  const first = await c.claimStream(CONSUMER, hand, 1);
  const next: NextLeaseOptions = { nextLeaseTtl: 30 };
  const finished: StreamFinishResponse = await c.completeStreamNext(CONSUMER, hand, 1, first.fencingToken, next);
  const event: ParkedEvent | null = finished.next;
  assert.ok(event && event.payload.toString() === 'two');
  await c.extendStreamLease(CONSUMER, hand, event.sequence, event.fencingToken, { leaseTtl: 30 });
  await c.rejectStreamNext(CONSUMER, hand, event.sequence, event.fencingToken, { reason: 'BAD', ...next });
  const pickup: ClaimParkedOptions = { stream: hand, leaseTtl: 30, owner: 'typed' };
  const none: ClaimParkedResponse = await c.claimParked(CONSUMER, pickup);
  assert.equal(none.event, null);
  const parkedOptions: DoParkedOptions = { stream: hand, leaseTtl: 30, settle: settleReleased, signal: null };
  const idle: DoParkedResult = await dedupd.doParked(c, CONSUMER, released, parkedOptions);
  assert.equal(idle.found, false);
  assert.ok(new dedupd.ParkFull('full') instanceof dedupd.DedupError);
  assert.ok(new dedupd.ParkUnsupported('old server') instanceof dedupd.DedupError);
  return res;
}

/** A poll of three keys through the batch calls, then through doBatch. */
async function batches(c: dedupd.Client, prefix: string): Promise<BatchOutcome[]> {
  const items: ClaimBatchItem[] = [{ key: `${prefix}-1`, digest: dedupd.digestBytes('1') }, { key: `${prefix}-2` }];
  const claimed: Array<ItemResult<ClaimResponse>> = await c.claimBatch(CONSUMER, [...items, '']);
  assert.ok(claimed[2].error instanceof dedupd.InvalidRequest);
  const tokens: Int64[] = claimed.slice(0, 2).map((r) => (r.value ? r.value.fencingToken : '0'));
  const heartbeat: ExtendLeaseBatchItem[] = items.map(({ key }, i) => ({ key, fencingToken: tokens[i], leaseTtl: 60 }));
  await c.extendLeaseBatch(CONSUMER, heartbeat);
  const finish: FinishBatchItem[] = [
    { key: items[0].key, fencingToken: tokens[0], result: 'ok' },
    { key: items[1].key, fencingToken: BigInt(tokens[1]), rejection: { reason: 'NO', retryable: true } },
  ];
  const finished: Array<ItemResult<DedupRecord>> = await c.finishBatch(CONSUMER, finish);
  assert.equal(finished[0].resultOmitted, false);
  const looked = await c.lookupBatch(CONSUMER, [items[0].key]);
  assert.equal(looked[0].value?.result.toString(), 'ok');
  const work: BatchWork = (key, token, _attempt, _signal, record) => `${key}/${token}/${record.attempts}`;
  const settle: BatchSettle = async (key, _token, attempt) => (BigInt(attempt) > 1n ? null : key);
  const options: DoBatchOptions = { leaseTtl: 30, parallelism: 2, settle };
  const outcomes: BatchOutcome[] = await dedupd.doBatch(c, CONSUMER, [{ key: items[0].key, digest: dedupd.digestBytes('1') }, items[1].key], work, options);
  assert.equal(outcomes[0].outcome?.replayed, true);
  return outcomes;
}

async function main(): Promise<void> {
  const addr = process.env['DEDUPD_ADDR'] ?? '127.0.0.1:7070';
  const run = `typed-${process.hrtime.bigint()}`;
  const [c, ...others] = clients(addr);
  if (!c) throw new Error('no client');
  for (const other of others) other.close();
  const record = await lowLevel(c, `${run}-low`);
  await rejections(c, `${run}-reject`);
  await twoPhase(c, `${run}-do`);
  await reconciling(c, `${run}-crashed`);
  await typedErrors(c, `${run}-low`);
  await callOptions(c, `${run}-call-options`);
  assert.equal((await streams(c, `${run}-stream`)).highWater, '4');
  assert.equal((await parking(c, `${run}-park`)).stream.highWater, '3');
  await batches(c, `${run}-batch`);
  await receiptsApi(c, `${run}-receipts`);
  errors(record);
  digests();
  console.log(`typed example: ok (${await listing(c, run)} records listed)`);
  c.close();
}

main().catch((err: unknown) => {
  console.error('typed example:', err);
  process.exit(1);
});
