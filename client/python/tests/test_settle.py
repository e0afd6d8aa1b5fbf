"""settle= in do() against a real dedupd: it runs before fn on a takeover
(attempt above 1) and never on a first acquisition; a result completes the
key without fn, None runs fn, Terminal rejects, an exception leaves the
claim PENDING. A process-ending BaseException in fn leaves it PENDING too.
fn gets the record and the lease when it asks for them."""

import asyncio
import time
import unittest

import dedupd

from .clients import aio_twin
from .server import ClientTestCase, unique_key
from .test_client import take_over

CONSUMER = "py-settle"


def crashed(client, key, lease_ttl=0.2):
    """A holder that claims key and dies: its lease runs out, nothing is
    recorded. do() then takes the key over as attempt 2."""
    claim = client.claim(CONSUMER, key, lease_ttl=lease_ttl, owner="crashed")
    assert claim.outcome == dedupd.OUTCOME_ACQUIRED
    return claim


class Recorder:
    """A fn or settle that records its calls (positional arguments and the
    record's attempts) and answers `answer`, or raises `raises`."""

    def __init__(self, answer=None, raises=None):
        self.calls, self.answer, self.raises = [], answer, raises

    def __call__(self, token, attempt, *, record):
        self.calls.append((token, attempt, record.attempts, record.fencing_token))
        if self.raises is not None:
            raise self.raises
        return self.answer


class SettleTest(ClientTestCase):
    def test_found_completes_with_its_result_without_fn(self):
        key = unique_key()
        crashed(self.client, key)
        settle, fn = Recorder(answer=b"charge ch_1"), Recorder(answer=b"charged again")
        out = self.api.do(self.client, CONSUMER, key, fn, settle=settle)
        self.assertEqual(settle.calls, [(2, 2, 2, 2)])
        self.assertEqual(fn.calls, [])
        self.assertTrue(out.settled)
        self.assertFalse(out.replayed)
        self.assertEqual(out.result, b"charge ch_1")
        stored = self.client.lookup(CONSUMER, key)
        self.assertEqual(stored.state, dedupd.STATE_COMPLETED)
        self.assertEqual(stored.result, b"charge ch_1")

    def test_not_found_runs_fn(self):
        key = unique_key()
        crashed(self.client, key)
        settle, fn = Recorder(answer=None), Recorder(answer="fresh")
        out = self.api.do(self.client, CONSUMER, key, fn, settle=settle)
        self.assertEqual(settle.calls, [(2, 2, 2, 2)])
        self.assertEqual(fn.calls, [(2, 2, 2, 2)])
        self.assertFalse(out.settled)
        self.assertEqual(self.client.lookup(CONSUMER, key).result, b"fresh")

    def test_empty_result_is_found(self):
        key = unique_key()
        crashed(self.client, key)
        fn = Recorder(answer=b"x")
        out = self.api.do(self.client, CONSUMER, key, fn, settle=Recorder(answer=b""))
        self.assertTrue(out.settled)
        self.assertEqual(fn.calls, [])
        self.assertEqual(self.client.lookup(CONSUMER, key).state, dedupd.STATE_COMPLETED)

    def test_not_called_on_the_first_acquisition(self):
        key = unique_key()
        settle, fn = Recorder(answer=b"never"), Recorder(answer=b"first")
        out = self.api.do(self.client, CONSUMER, key, fn, settle=settle)
        self.assertEqual(settle.calls, [])
        self.assertEqual(fn.calls, [(1, 1, 1, 1)])
        self.assertEqual(out.result, b"first")

    def test_failure_leaves_the_claim_pending_and_runs_again_later(self):
        key = unique_key()
        crashed(self.client, key)
        fn = Recorder(answer=b"x")
        with self.assertRaises(ConnectionError):
            self.api.do(self.client, CONSUMER, key, fn, lease_ttl=0.3,
                      settle=Recorder(raises=ConnectionError("gateway down")))
        pending = self.client.lookup(CONSUMER, key)
        self.assertEqual(pending.state, dedupd.STATE_PENDING)
        self.assertEqual(pending.fencing_token, 2)
        self.assertEqual(fn.calls, [])
        # Once that lease runs out, the next delivery settles it.
        settle = Recorder(answer=b"found later")
        out = self.api.do(self.client, CONSUMER, key, fn, settle=settle)
        self.assertEqual(settle.calls, [(3, 3, 3, 3)])
        self.assertEqual(out.result, b"found later")
        self.assertEqual(fn.calls, [])

    def test_terminal_rejects_for_good(self):
        key = unique_key()
        crashed(self.client, key)
        fn = Recorder(answer=b"x")
        settle = Recorder(raises=dedupd.Terminal("CARD_DECLINED", "the gateway refused it"))
        with self.assertRaises(dedupd.Rejected) as cm:
            self.api.do(self.client, CONSUMER, key, fn, settle=settle)
        self.assertFalse(cm.exception.replayed)
        self.assertEqual(fn.calls, [])
        stored = self.client.lookup(CONSUMER, key)
        self.assertEqual(stored.state, dedupd.STATE_REJECTED)
        self.assertEqual(stored.rejection.reason, "CARD_DECLINED")
        self.assertFalse(stored.rejection.retryable)


class AmbiguousFailureTest(ClientTestCase):
    def assert_left_pending(self, raised):
        key = unique_key()

        def fn(token, attempt):
            raise raised

        with self.assertRaises(type(raised)):
            self.api.do(self.client, CONSUMER, key, fn, lease_ttl=0.3)
        stored = self.client.lookup(CONSUMER, key)
        self.assertEqual(stored.state, dedupd.STATE_PENDING)
        self.assertEqual((stored.fencing_token, stored.attempts), (1, 1))
        # As after a crash: the next holder takes over and settles.
        settle = Recorder(answer=b"it did happen")
        out = self.api.do(self.client, CONSUMER, key, Recorder(answer=b"again"), settle=settle)
        self.assertEqual([c[:2] for c in settle.calls], [(2, 2)])
        self.assertTrue(out.settled)

    def test_keyboard_interrupt_leaves_the_claim_pending(self):
        self.assert_left_pending(KeyboardInterrupt())

    def test_system_exit_leaves_the_claim_pending(self):
        self.assert_left_pending(SystemExit(3))

    def test_cancellation_leaves_the_claim_pending(self):
        self.assert_left_pending(asyncio.CancelledError())

    def test_a_timeout_leaves_the_claim_pending(self):
        # The request may have done its work after the caller stopped
        # waiting: the classic unknown outcome (docs/guarantees.md).
        self.assert_left_pending(TimeoutError("gateway slow"))

    def test_an_exception_still_releases(self):
        key = unique_key()

        def fn(token, attempt):
            raise ConnectionRefusedError("gateway down")

        with self.assertRaises(ConnectionRefusedError):
            self.api.do(self.client, CONSUMER, key, fn)
        self.assertEqual(self.client.lookup(CONSUMER, key).state, dedupd.STATE_RELEASED)


class WhatFnGetsTest(ClientTestCase):
    def test_record_and_lease_when_asked(self):
        key, seen = unique_key(), []

        def fn(token, attempt, *, record, lease):
            seen.append((token, attempt, record.key, record.attempts, record.fencing_token,
                         lease.lost, lease.remaining(), lease.error))
            return b"ok"

        self.api.do(self.client, CONSUMER, key, fn, lease_ttl=30)
        token, attempt, rkey, rattempts, rtoken, lost, remaining, error = seen[0]
        self.assertEqual((token, attempt, rkey, rattempts, rtoken), (1, 1, key, 1, 1))
        self.assertFalse(lost)
        self.assertIsNone(error)
        self.assertGreater(remaining, 0)
        self.assertLessEqual(remaining, 30)

    def test_kwargs_gets_both_and_settle_gets_them_too(self):
        key, got = unique_key(), {}
        crashed(self.client, key)

        def settle(token, attempt, **kw):
            got["settle"] = sorted(kw)

        def fn(token, attempt, **kw):
            got["fn"] = sorted(kw)

        self.api.do(self.client, CONSUMER, key, fn, settle=settle)
        self.assertEqual(got, {"settle": ["lease", "record"], "fn": ["lease", "record"]})

    def test_lease_lost_signal(self):
        key, c, seen = unique_key(), self.client, {}

        def fn(token, attempt, *, lease):
            # No extension before the beat at 1 s: the 0.3 s lease runs out
            # locally first, then someone takes the key over, and the next
            # extension is answered LEASE_LOST.
            bound = time.monotonic() + 20
            while not lease.lost:
                self.assertLess(time.monotonic(), bound, "the lease never ran out")
                time.sleep(0.02)
            seen["remaining"] = lease.remaining()
            take_over(c, CONSUMER, key)
            while lease.error is None:
                self.assertLess(time.monotonic(), bound, "the heartbeat never saw the loss")
                time.sleep(0.02)
            seen["error"] = lease.error
            return b"too late"

        with self.assertRaises(dedupd.LeaseLost):
            self.api.do(c, CONSUMER, key, fn, lease_ttl=0.3, heartbeat_every=1.0)
        self.assertEqual(seen["remaining"], 0)
        self.assertIsInstance(seen["error"], dedupd.LeaseLost)
        self.assertEqual(c.lookup(CONSUMER, key).owner, "taker")


SettleTestAio = aio_twin(SettleTest)
AmbiguousFailureTestAio = aio_twin(AmbiguousFailureTest)
WhatFnGetsTestAio = aio_twin(WhatFnGetsTest)


if __name__ == "__main__":
    unittest.main()
