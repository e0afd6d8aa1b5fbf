"""dedupd.aio with native coroutines against a real dedupd: what only an
event loop can show. Every other behaviour of dedupd.aio runs in the
shared tests (their aio_twin classes)."""

import asyncio
import unittest

import dedupd
import dedupd.aio

from .server import server, unique_key

CONSUMER = "py-aio"


class NativeTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.addr = server().addr  # started (once per run) outside the event loop

    async def asyncSetUp(self):
        self.client = dedupd.aio.Client(self.addr)

    async def asyncTearDown(self):
        await self.client.close()

    async def test_concurrent_calls_on_one_loop_run_fn_once(self):
        key, effects, release = unique_key(), [], asyncio.Event()

        async def charge(token, attempt):
            effects.append(token)
            await release.wait()  # every other call claims while this one holds the key
            return b"charged"

        calls = [asyncio.ensure_future(dedupd.aio.do(self.client, CONSUMER, key, charge,
                                                     max_wait=60)) for _ in range(8)]
        while not effects:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        release.set()
        outcomes = await asyncio.gather(*calls)
        self.assertEqual(effects, [1])
        self.assertEqual([o.result for o in outcomes], [b"charged"] * 8)
        self.assertEqual(sorted(o.replayed for o in outcomes), [False] + [True] * 7)

    async def test_cancelled_do_leaves_the_claim_pending_for_settle(self):
        key, started = unique_key(), asyncio.Event()

        async def slow(token, attempt):
            started.set()
            await asyncio.sleep(3600)

        task = asyncio.ensure_future(dedupd.aio.do(self.client, CONSUMER, key, slow,
                                                   lease_ttl=0.3))
        await started.wait()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        stored = await self.client.lookup(CONSUMER, key)
        self.assertEqual((stored.state, stored.fencing_token), (dedupd.STATE_PENDING, 1))

        async def found(token, attempt):
            return b"it did happen"

        out = await dedupd.aio.do(self.client, CONSUMER, key, slow, settle=found)
        self.assertTrue(out.settled)
        self.assertEqual((out.result, out.record.fencing_token), (b"it did happen", 2))

    async def test_a_deadline_around_do_is_an_unknown_outcome(self):
        key = unique_key()

        async def slow(token, attempt):
            await asyncio.sleep(3600)

        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(dedupd.aio.do(self.client, CONSUMER, key, slow), 0.3)
        self.assertEqual((await self.client.lookup(CONSUMER, key)).state, dedupd.STATE_PENDING)

    async def test_heartbeat_task_extends_while_fn_awaits(self):
        key = unique_key()

        async def long_work(token, attempt, *, lease):
            first = (await self.client.lookup(CONSUMER, key)).lease_expires_at.ToNanoseconds()
            for _ in range(600):
                now = (await self.client.lookup(CONSUMER, key)).lease_expires_at.ToNanoseconds()
                if now >= first + 10**9:
                    break
                await asyncio.sleep(0.05)
            else:
                self.fail("the lease was never extended")
            busy = await self.client.claim(CONSUMER, key)
            self.assertEqual(busy.outcome, dedupd.OUTCOME_IN_PROGRESS)
            self.assertFalse(lease.lost)
            return b"long"

        out = await dedupd.aio.do(self.client, CONSUMER, key, long_work, lease_ttl=1.0,
                                  heartbeat_every=0.2)
        self.assertEqual((out.result, out.record.fencing_token), (b"long", 1))

    async def test_do_batch_runs_at_most_parallelism_coroutines(self):
        keys, running, most = [unique_key() for _ in range(6)], [0], [0]

        async def work(key, token, attempt):
            running[0] += 1
            most[0] = max(most[0], running[0])
            await asyncio.sleep(0.05)
            running[0] -= 1
            return key

        out = await dedupd.aio.do_batch(self.client, CONSUMER, keys, work, parallelism=2)
        self.assertEqual([o.outcome.result for o in out], [k.encode() for k in keys])
        self.assertEqual(most[0], 2)

    async def test_reconcile_awaits_an_async_decide(self):
        consumer = f"{CONSUMER}-{unique_key('r')[-12:]}"
        await self.client.claim(consumer, "k", lease_ttl=0.2, owner="crashed")
        settled = []
        for _ in range(200):
            settled = await dedupd.aio.reconcile(self.client, consumer, self._complete)
            if settled:
                break
            await asyncio.sleep(0.05)
        self.assertEqual([(s.key, s.record.state) for s in settled],
                         [("k", dedupd.STATE_COMPLETED)])
        self.assertEqual((await self.client.lookup(consumer, "k")).result, b"found")

    @staticmethod
    async def _complete(record, token):
        await asyncio.sleep(0)
        return dedupd.Complete(b"found")


if __name__ == "__main__":
    unittest.main()
