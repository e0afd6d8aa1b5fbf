"""do() against a real dedupd: run once, replay, reject, release, wait,
time out, heartbeat and lose the lease."""

import threading
import time
import unittest

import dedupd

from .clients import aio_twin
from .server import ClientTestCase, Server, unique_key
from .test_client import take_over

CONSUMER = "py-do"


class Calls:
    """A fn for do() that records how it was called."""

    def __init__(self, result=b"done", raises=None):
        self.calls, self.result, self.raises = [], result, raises

    def __call__(self, token, attempt):
        self.calls.append((token, attempt))
        if self.raises:
            raise self.raises
        return self.result


class SeesInProgress:
    """Wraps a Client and sets an event once a Claim answered IN_PROGRESS."""

    def __init__(self, client):
        self.client, self.seen = client, threading.Event()

    def __getattr__(self, name):
        return getattr(self.client, name)

    def claim(self, *args, **kwargs):
        resp = self.client.claim(*args, **kwargs)
        if resp.outcome == dedupd.OUTCOME_IN_PROGRESS:
            self.seen.set()
        return resp


class CountsClaims:
    """Wraps a Client, counts its Claims and sets an event as each is sent."""

    def __init__(self, client):
        self.client, self.claims, self.sent = client, 0, threading.Event()

    def __getattr__(self, name):
        return getattr(self.client, name)

    def claim(self, *args, **kwargs):
        self.claims += 1
        self.sent.set()
        return self.client.claim(*args, **kwargs)


class DoTest(ClientTestCase):
    def test_runs_once_then_replays(self):
        key, fn = unique_key(), Calls(result="stored")
        first = self.api.do(self.client, CONSUMER, key, fn, digest=dedupd.digest_bytes(b"a"))
        self.assertFalse(first.replayed)
        self.assertEqual(first.result, b"stored")
        self.assertEqual(fn.calls, [(1, 1)])
        again = self.api.do(self.client, CONSUMER, key, fn, digest=dedupd.digest_bytes(b"a"))
        self.assertTrue(again.replayed)
        self.assertEqual(again.result, b"stored")
        self.assertEqual(len(fn.calls), 1)

    def test_terminal_is_stored_and_replayed(self):
        key = unique_key()
        fn = Calls(raises=dedupd.Terminal("OUT_OF_STOCK", "stock 2 < 3", b"2"))
        with self.assertRaises(dedupd.Rejected) as cm:
            self.api.do(self.client, CONSUMER, key, fn)
        self.assertFalse(cm.exception.replayed)
        self.assertEqual(cm.exception.rejection.reason, "OUT_OF_STOCK")
        self.assertIsInstance(cm.exception.__cause__, dedupd.Terminal)
        with self.assertRaises(dedupd.Rejected) as cm:
            self.api.do(self.client, CONSUMER, key, fn)
        self.assertTrue(cm.exception.replayed)
        self.assertEqual(cm.exception.rejection.detail, b"2")
        self.assertEqual(len(fn.calls), 1)

    def test_other_exception_releases_for_a_retry(self):
        key = unique_key()
        with self.assertRaises(ConnectionError):
            self.api.do(self.client, CONSUMER, key, Calls(raises=ConnectionError("db down")))
        released = self.client.lookup(CONSUMER, key)
        self.assertEqual(released.state, dedupd.STATE_RELEASED)
        self.assertEqual(released.rejection.reason, "RETRYABLE_ERROR")
        self.assertEqual(released.rejection.message, "ConnectionError: db down")
        self.assertTrue(released.rejection.retryable)
        fn = Calls()
        out = self.api.do(self.client, CONSUMER, key, fn)
        self.assertFalse(out.replayed)
        self.assertEqual(fn.calls, [(2, 2)])

    def test_server_waits_for_the_holder(self):
        """do() asks the server to wait: one claim, answered with the
        holder's outcome as soon as it is stored."""
        key = unique_key()
        holder = self.client.claim(CONSUMER, key, lease_ttl=60, owner="holder")
        counting, fn, outcome = CountsClaims(self.client), Calls(), []
        waiter = threading.Thread(target=lambda: outcome.append(
            self.api.do(counting, CONSUMER, key, fn, max_wait=60)))
        waiter.start()
        self.assertTrue(counting.sent.wait(30), "do() never claimed")
        time.sleep(0.3)  # a polling do() would claim again meanwhile
        self.client.complete(CONSUMER, key, holder.fencing_token, b"holder's")
        waiter.join(60)
        self.assertEqual(len(outcome), 1)
        self.assertTrue(outcome[0].replayed)
        self.assertEqual(outcome[0].result, b"holder's")
        self.assertEqual(counting.claims, 1)
        self.assertEqual(fn.calls, [])

    def test_in_progress_timeout(self):
        key = unique_key()
        self.client.claim(CONSUMER, key, lease_ttl=60, owner="holder")
        with self.assertRaises(dedupd.InProgressTimeout) as cm:
            self.api.do(self.client, CONSUMER, key, Calls(), max_wait=0.3)
        self.assertEqual(cm.exception.record.owner, "holder")

    def test_own_claim_with_lost_reply_is_carried_on(self):
        key = unique_key()

        class LosesFirstReply:
            """Applies the first Claim but answers as a retry would: IN_PROGRESS."""

            def __init__(self, client):
                self.client, self.claims = client, 0

            def __getattr__(self, name):
                return getattr(self.client, name)

            def claim(self, *args, **kwargs):
                self.claims += 1
                if self.claims == 1:
                    self.client.claim(*args, **kwargs)
                return self.client.claim(*args, **kwargs)

        fn = Calls()
        out = self.api.do(LosesFirstReply(self.client), CONSUMER, key, fn, owner="w", max_wait=0)
        self.assertFalse(out.replayed)
        self.assertEqual(fn.calls, [(1, 1)])
        self.assertTrue(out.record.owner.startswith("w#"))

    def test_digest_mismatch(self):
        key = unique_key()
        self.api.do(self.client, CONSUMER, key, Calls(), digest=dedupd.digest_json({"n": 1}))
        with self.assertRaises(dedupd.DigestMismatch) as cm:
            self.api.do(self.client, CONSUMER, key, Calls(), digest=dedupd.digest_json({"n": 2}))
        self.assertEqual(cm.exception.record.result, b"done")

    def test_heartbeat_keeps_the_lease_past_its_ttl(self):
        key, c = unique_key(), self.client

        def long_work(token, attempt):
            first = c.lookup(CONSUMER, key).lease_expires_at.ToNanoseconds()
            # Wait until a heartbeat set the lease a whole TTL past the first
            # expiry: the store's clock is then past that first expiry.
            deadline = time.monotonic() + 30
            while c.lookup(CONSUMER, key).lease_expires_at.ToNanoseconds() < first + 10**9:
                self.assertLess(time.monotonic(), deadline, "the lease was never extended")
                time.sleep(0.05)
            busy = c.claim(CONSUMER, key)
            self.assertEqual(busy.outcome, dedupd.OUTCOME_IN_PROGRESS)
            return b"long"

        out = self.api.do(c, CONSUMER, key, long_work, lease_ttl=1.0, heartbeat_every=0.2)
        self.assertEqual(out.result, b"long")
        self.assertEqual(out.record.fencing_token, 1)

    def test_lease_lost_when_taken_over(self):
        key, c = unique_key(), self.client

        def overrun(token, attempt):
            take_over(c, CONSUMER, key)  # our lease ran out; someone took the key
            return b"too late"

        # No heartbeat within the work: the lease runs out.
        with self.assertRaises(dedupd.LeaseLost) as cm:
            self.api.do(c, CONSUMER, key, overrun, lease_ttl=0.2, heartbeat_every=3600)
        self.assertEqual(cm.exception.record.fencing_token, 2)
        self.assertEqual(cm.exception.record.owner, "taker")


DoTestAio = aio_twin(DoTest)


class DoWithoutServerWaitTest(ClientTestCase):
    """Against a dedupd that does not wait (as one older than the wait
    field, which ignores it), do() polls with backoff."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(["--max-claim-wait", "0"])
        cls.client = cls.api.Client(cls.server.addr)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_waits_for_the_holder_then_replays(self):
        key = unique_key()
        holder = self.client.claim(CONSUMER, key, lease_ttl=60, owner="holder")
        watching, fn, outcome = SeesInProgress(self.client), Calls(), []
        waiter = threading.Thread(target=lambda: outcome.append(
            self.api.do(watching, CONSUMER, key, fn, max_wait=60)))
        waiter.start()
        self.assertTrue(watching.seen.wait(30), "do() never saw IN_PROGRESS")
        self.client.complete(CONSUMER, key, holder.fencing_token, b"holder's")
        waiter.join(60)
        self.assertEqual(len(outcome), 1)
        self.assertTrue(outcome[0].replayed)
        self.assertEqual(outcome[0].result, b"holder's")
        self.assertEqual(fn.calls, [])


DoWithoutServerWaitTestAio = aio_twin(DoWithoutServerWaitTest)


if __name__ == "__main__":
    unittest.main()


class LeaseStartTest(unittest.TestCase):
    """lease_start on hand-computed times of a 30 s lease."""

    def test_cases(self) -> None:
        from dedupd.lease import lease_start
        for answered, want in [(0.02, 0.0), (3.0, 0.0), (20.0, 17.0), (45.0, 42.0)]:
            with self.subTest(answered=answered):
                self.assertAlmostEqual(lease_start(100.0, 100.0 + answered, 30.0), 100.0 + want)
