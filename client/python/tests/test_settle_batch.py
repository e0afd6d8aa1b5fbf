"""settle= in do_batch(), do_in_order() and reconcile() against a real
dedupd: the same rule as do()'s, for a whole poll, a stream's events and
the reconciliation pass."""

import threading
import unittest

import dedupd

from .clients import aio_twin
from .server import ClientTestCase, unique_key
from .test_reconcile import wait_expired

CONSUMER = "py-settle-batch"


class Gateway:
    """What the caller's own system knows: keys whose effect happened,
    with their result, and keys it cannot answer for (its lookup fails)."""

    def __init__(self, done=None, failing=()):
        self.done, self.failing = dict(done or {}), set(failing)
        self.lookups, self.effects, self.lock = [], [], threading.Lock()

    def settle(self, key, token, attempt, *, record):
        with self.lock:
            self.lookups.append((key, attempt, record.attempts))
        if key in self.failing:
            raise ConnectionError("gateway lookup down")
        return self.done.get(key)

    def fn(self, key, token, attempt):
        with self.lock:
            self.effects.append(key)
        if key == "exit":
            raise SystemExit(1)
        return f"charged {key}"


class DoBatchSettleTest(ClientTestCase):
    def test_settle_per_retaken_key(self):
        consumer = f"{CONSUMER}-{unique_key('b')[-12:]}"
        c = self.client
        for key in ("found", "missing", "unknown"):
            c.claim(consumer, key, lease_ttl=0.2, owner="crashed")
        wait_expired(c, consumer, ["found", "missing", "unknown"])
        gw = Gateway(done={"found": b"ch_found"}, failing={"unknown"})
        out = {o.key: o for o in self.api.do_batch(c, consumer, ["found", "missing", "unknown", "new"],
                                                 gw.fn, settle=gw.settle)}
        self.assertEqual(sorted(gw.lookups), [("found", 2, 2), ("missing", 2, 2), ("unknown", 2, 2)])
        self.assertEqual(sorted(gw.effects), ["missing", "new"])
        self.assertTrue(out["found"].outcome.settled)
        self.assertEqual(out["found"].outcome.result, b"ch_found")
        self.assertFalse(out["missing"].outcome.settled)
        self.assertIsInstance(out["unknown"].error, ConnectionError)
        states = {k: c.lookup(consumer, k) for k in ("found", "missing", "unknown", "new")}
        self.assertEqual(states["found"].result, b"ch_found")
        self.assertEqual(states["missing"].result, b"charged missing")
        self.assertEqual(states["new"].result, b"charged new")
        self.assertEqual(states["unknown"].state, dedupd.STATE_PENDING)

    def test_base_exception_leaves_its_key_pending_and_is_raised_after_the_rest(self):
        consumer = f"{CONSUMER}-{unique_key('x')[-12:]}"
        gw = Gateway()
        with self.assertRaises(SystemExit):
            self.api.do_batch(self.client, consumer, ["exit", "fine"], gw.fn, settle=gw.settle)
        self.assertEqual(self.client.lookup(consumer, "exit").state, dedupd.STATE_PENDING)
        self.assertEqual(self.client.lookup(consumer, "fine").state, dedupd.STATE_COMPLETED)
        self.assertEqual(gw.lookups, [])  # first acquisitions: settle never ran


class DoInOrderSettleTest(ClientTestCase):
    def test_found_completes_without_fn(self):
        c, s, applied = self.client, unique_key("order"), []
        res = self.api.do_in_order(c, CONSUMER, s, 1, applied.append, settle=lambda token: True)
        self.assertTrue(res.settled)
        self.assertEqual(res.stream.high_water, 1)
        self.assertEqual(applied, [])
        res = self.api.do_in_order(c, CONSUMER, s, 2, applied.append, settle=lambda token: False)
        self.assertFalse(res.settled)
        self.assertEqual(applied, [res.stream.fencing_token])

    def test_settle_failure_and_interrupt_leave_the_claim_pending(self):
        c, s = self.client, unique_key("order")

        def down(token, *, stream):
            raise ConnectionError("lookup down")

        with self.assertRaises(ConnectionError):
            self.api.do_in_order(c, CONSUMER, s, 1, lambda token: None, settle=down, lease_ttl=0.3)
        self.assertEqual(c.get_stream(CONSUMER, s).in_flight, 1)

        def interrupted(token):
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            self.api.do_in_order(c, CONSUMER, s, 1, interrupted, lease_ttl=0.3)
        self.assertEqual(c.get_stream(CONSUMER, s).in_flight, 1)
        seen = []

        def found(token, *, stream, lease):
            seen.append((stream.in_flight, lease.lost))
            return True

        res = self.api.do_in_order(c, CONSUMER, s, 1, lambda token: None, settle=found)
        self.assertEqual(seen, [(1, False)])
        self.assertEqual(res.stream.high_water, 1)

    def test_terminal_from_settle_rejects_the_event(self):
        c, s = self.client, unique_key("order")

        def poison(token):
            raise dedupd.Terminal("UNPARSEABLE")

        with self.assertRaises(dedupd.StreamRejected) as cm:
            self.api.do_in_order(c, CONSUMER, s, 1, lambda token: None, settle=poison)
        self.assertEqual(cm.exception.stream.last_rejection.reason, "UNPARSEABLE")


class ReconcileSettleTest(ClientTestCase):
    def test_one_settle_serves_reconcile(self):
        c = self.client
        consumer = f"{CONSUMER}-{unique_key('r')[-12:]}"
        keys = ("found", "missing", "refused", "unknown")
        first = {k: c.claim(consumer, k, lease_ttl=0.2, owner="crashed") for k in keys}
        wait_expired(c, consumer, keys)
        lookups = []

        def settle(token, attempt, *, record):
            lookups.append((record.key, token, attempt))
            if record.key == "found":
                return "ch_1"
            if record.key == "refused":
                raise dedupd.Terminal("CARD_DECLINED")
            if record.key == "unknown":
                raise ConnectionError("lookup down")
            return None

        with self.assertRaises(ConnectionError):
            self.api.reconcile(c, consumer, settle=settle, page_size=10)
        # Keys are listed in order: found, missing, refused, then unknown.
        self.assertEqual([k for k, _, _ in lookups], list(keys))
        for key, token, attempt in lookups:
            self.assertEqual((token, attempt), (first[key].fencing_token + 1, 2))
        states = {k: c.lookup(consumer, k) for k in keys}
        self.assertEqual(states["found"].state, dedupd.STATE_COMPLETED)
        self.assertEqual(states["found"].result, b"ch_1")
        self.assertEqual(states["missing"].state, dedupd.STATE_RELEASED)
        self.assertEqual(states["refused"].state, dedupd.STATE_REJECTED)
        self.assertEqual(states["unknown"].state, dedupd.STATE_PENDING)
        self.assertEqual(states["unknown"].fencing_token, 2)

    def test_decide_or_settle(self):
        with self.assertRaises(ValueError):
            self.api.reconcile(self.client, CONSUMER)
        with self.assertRaises(ValueError):
            self.api.reconcile(self.client, CONSUMER, lambda r, t: dedupd.Release(),
                             settle=lambda t, a: None)


DoBatchSettleTestAio = aio_twin(DoBatchSettleTest)
DoInOrderSettleTestAio = aio_twin(DoInOrderSettleTest)
ReconcileSettleTestAio = aio_twin(ReconcileSettleTest)


if __name__ == "__main__":
    unittest.main()
