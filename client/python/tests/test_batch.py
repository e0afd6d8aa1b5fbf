"""Batch calls and do_batch() against a real dedupd."""

import threading
import time

import dedupd
from dedupd import ClaimItem, ExtendItem, FinishItem

from .clients import aio_twin
from .server import ClientTestCase, unique_key

CONSUMER = "py-batch"


class BatchCallsTest(ClientTestCase):
    def test_each_item_answers_as_its_lone_call(self):
        a, b = unique_key(), unique_key()
        claimed = self.client.claim_batch(CONSUMER, [ClaimItem(a, b"d"), b, ClaimItem(a, b"d"), ""])
        self.assertEqual([c.value.outcome if c.value else None for c in claimed],
                         [dedupd.OUTCOME_ACQUIRED, dedupd.OUTCOME_ACQUIRED,
                          dedupd.OUTCOME_IN_PROGRESS, None])
        self.assertIsInstance(claimed[3].error, dedupd.InvalidRequest)
        self.assertEqual(claimed[3].error.metadata.get("field"), "items[3].key")

        token_a, token_b = claimed[0].value.fencing_token, claimed[1].value.fencing_token
        extended = self.client.extend_lease_batch(
            CONSUMER, [ExtendItem(a, token_a, 60), ExtendItem(b, token_b + 5)])
        self.assertIsNone(extended[0].error)
        self.assertIsInstance(extended[1].error, dedupd.LeaseLost)

        finished = self.client.finish_batch(CONSUMER, [
            FinishItem(a, token_a, result=b"ok"),
            FinishItem(b, token_b, rejection=dedupd.dedup_pb2.Rejection(reason="NO")),
            FinishItem(a, token_a, result=b"other")])
        self.assertEqual(finished[0].value.state, dedupd.STATE_COMPLETED)
        self.assertEqual(finished[1].value.state, dedupd.STATE_REJECTED)
        self.assertIsInstance(finished[2].error, dedupd.AlreadyFinished)
        self.assertEqual(finished[2].error.record.result, b"ok")

        looked = self.client.lookup_batch(CONSUMER, [a, unique_key()])
        self.assertEqual(looked[0].value.result, b"ok")
        self.assertIsInstance(looked[1].error, dedupd.RecordNotFound)

        mismatch = self.client.claim_batch(CONSUMER, [ClaimItem(a, b"other")])
        self.assertIsInstance(mismatch[0].error, dedupd.DigestMismatch)

    def test_whole_call_refused_for_an_invalid_consumer(self):
        with self.assertRaises(dedupd.InvalidRequest):
            self.client.claim_batch("Not Valid", ["k"])


class Counting:
    """fn for do_batch: counts calls per key, fails some keys."""

    def __init__(self, refuse=(), flaky=(), wait=None):
        self.calls, self.lock = {}, threading.Lock()
        self.refuse, self.flaky, self.wait = set(refuse), set(flaky), wait

    def __call__(self, key, token, attempt):
        with self.lock:
            self.calls[key] = self.calls.get(key, 0) + 1
        if self.wait:
            self.wait()
        if key in self.refuse:
            raise dedupd.Terminal("NO", "refused")
        if key in self.flaky:
            raise RuntimeError("try again")
        return f"done {key}/{token}"


class DoBatchTest(ClientTestCase):
    def test_runs_replays_rejects_releases(self):
        m1, m2, refuse, flaky = (unique_key() for _ in range(4))
        fn = Counting(refuse=[refuse], flaky=[flaky])
        poll = [m1, (m2, b"d"), refuse, flaky, m1]
        first = self.api.do_batch(self.client, CONSUMER, poll, fn, parallelism=2)
        self.assertEqual(first[0].outcome.result, f"done {m1}/1".encode())
        self.assertFalse(first[0].outcome.replayed)
        self.assertEqual(first[4].outcome.result, first[0].outcome.result)
        self.assertEqual(fn.calls[m1], 1)
        self.assertIsInstance(first[2].error, dedupd.Rejected)
        self.assertIsInstance(first[3].error, RuntimeError)

        again = self.api.do_batch(self.client, CONSUMER, poll, fn)
        self.assertTrue(again[0].outcome.replayed)
        self.assertTrue(again[2].error.replayed)
        self.assertIsInstance(again[3].error, RuntimeError)
        self.assertEqual(fn.calls[flaky], 2)  # the release let it run again
        self.assertEqual(fn.calls[m1], 1)

    def test_heartbeats_keep_a_slow_poll(self):
        keys = [unique_key() for _ in range(3)]
        held = self.client.claim(CONSUMER, keys[2], lease_ttl=60)
        self.assertEqual(held.outcome, dedupd.OUTCOME_ACQUIRED)
        beats, real = [], self.client.extend_lease_batch

        def counting(consumer, items):
            beats.append(len(items))
            return real(consumer, items)
        self.client.extend_lease_batch = counting
        try:
            def slow():
                deadline = time.monotonic() + 10
                while len(beats) < 2 and time.monotonic() < deadline:
                    time.sleep(0.02)
            out = self.api.do_batch(self.client, CONSUMER, keys, Counting(wait=slow),
                                  lease_ttl=0.3, heartbeat_every=0.1)
        finally:
            del self.client.extend_lease_batch
        self.assertGreaterEqual(len(beats), 2)
        self.assertEqual(beats[0], 2)  # both running leases in one call
        self.assertIsNone(out[0].error)
        self.assertIsNone(out[1].error)
        self.assertIsInstance(out[2].error, dedupd.InProgressTimeout)


BatchCallsTestAio = aio_twin(BatchCallsTest)
DoBatchTestAio = aio_twin(DoBatchTest)
