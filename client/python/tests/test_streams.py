"""Streams against a real dedupd: a stream claimed in order, a duplicate
skipped, a gap refused with the expected sequence; do_in_order under a
redelivering loop; poison events and releases."""

import threading
import time
import unittest

import dedupd

from .clients import aio_twin
from .server import ClientTestCase, Server, unique_key

CONSUMER = "py-streams"


class StreamCallsTest(ClientTestCase):
    def test_in_order_duplicate_and_gap(self):
        c, s = self.client, unique_key("order")
        first = c.claim_stream(CONSUMER, s, 1, lease_ttl=30, owner="py")
        self.assertEqual(first.outcome, dedupd.STREAM_OUTCOME_ACQUIRED)
        self.assertGreater(first.fencing_token, 0)
        done = c.complete_stream(CONSUMER, s, 1, first.fencing_token)
        self.assertEqual(done.high_water, 1)
        dup = c.claim_stream(CONSUMER, s, 1)
        self.assertEqual(dup.outcome, dedupd.STREAM_OUTCOME_DUPLICATE)
        self.assertEqual(dup.stream.high_water, 1)
        with self.assertRaises(dedupd.SequenceGap) as cm:
            c.claim_stream(CONSUMER, s, 3)
        self.assertEqual(cm.exception.expected, 2)
        self.assertEqual(cm.exception.reason, "SEQUENCE_GAP")
        self.assertEqual(cm.exception.stream.high_water, 1)
        with self.assertRaises(dedupd.StreamNotFound):
            c.get_stream(CONSUMER, unique_key("none"))

    def test_mode_mismatch(self):
        c, s = self.client, unique_key("row")
        c.claim_stream(CONSUMER, s, 1000, mode=dedupd.STREAM_MODE_VERSIONS)
        with self.assertRaises(dedupd.StreamModeMismatch):
            c.claim_stream(CONSUMER, s, 1001, mode=dedupd.STREAM_MODE_DENSE)


class DoInOrderTest(ClientTestCase):
    def test_redelivering_loop_applies_each_event_once_in_order(self):
        s = unique_key("order")
        queue, applied, gaps, dups = [3, 1, 3, 2, 1, 4, 2], [], 0, 0
        while queue:
            seq = queue.pop(0)
            try:
                res = self.api.do_in_order(self.client, CONSUMER, s, seq,
                                         lambda token, seq=seq: applied.append(seq))
            except dedupd.SequenceGap as gap:
                self.assertLess(gap.expected, seq)
                gaps += 1
                queue.append(seq)  # redeliver later
                continue
            dups += res.duplicate
        self.assertEqual(applied, [1, 2, 3, 4])
        self.assertEqual(dups, 3)
        self.assertGreater(gaps, 0)

    def test_poison_event_is_skipped_and_plain_failure_released(self):
        c, s = self.client, unique_key("order")

        def boom(token):
            raise ValueError("boom")

        with self.assertRaises(ValueError):
            self.api.do_in_order(c, CONSUMER, s, 1, boom)
        self.assertEqual(c.get_stream(CONSUMER, s).in_flight, 0)

        def poison(token):
            raise dedupd.Terminal("UNPARSEABLE", "bad payload")

        with self.assertRaises(dedupd.StreamRejected) as cm:
            self.api.do_in_order(c, CONSUMER, s, 1, poison)
        self.assertEqual(cm.exception.stream.high_water, 1)
        self.assertEqual(cm.exception.stream.last_rejection.reason, "UNPARSEABLE")
        res = self.api.do_in_order(c, CONSUMER, s, 2, lambda token: None)
        self.assertEqual(res.stream.high_water, 2)

    def test_own_claim_with_lost_reply_is_carried_on(self):
        c, s = self.client, unique_key("order")

        class LosesFirstReply:
            """Applies the first ClaimStream but answers as its retry would:
            IN_PROGRESS for our own claim."""

            def __init__(self, client):
                self.client, self.claims = client, 0

            def __getattr__(self, name):
                return getattr(self.client, name)

            def claim_stream(self, *args, **kwargs):
                self.claims += 1
                if self.claims == 1:
                    self.client.claim_stream(*args, **kwargs)
                return self.client.claim_stream(*args, **kwargs)

        seen = []

        def work(token):
            seen.append((token, c.get_stream(CONSUMER, s).owner))

        res = self.api.do_in_order(LosesFirstReply(c), CONSUMER, s, 1, work, owner="w", max_wait=0)
        self.assertEqual(res.stream.high_water, 1)
        self.assertEqual(len(seen), 1)
        self.assertEqual(seen[0][0], res.stream.fencing_token)
        self.assertTrue(seen[0][1].startswith("w#"), seen[0][1])


StreamCallsTestAio = aio_twin(StreamCallsTest)
DoInOrderTestAio = aio_twin(DoInOrderTest)


if __name__ == "__main__":
    unittest.main()


class CountsStreamClaims:
    """Wraps a Client, counts its ClaimStreams and sets an event as each is
    sent."""

    def __init__(self, client):
        self.client, self.claims, self.sent = client, 0, threading.Event()

    def __getattr__(self, name):
        return getattr(self.client, name)

    def claim_stream(self, *args, **kwargs):
        self.claims += 1
        self.sent.set()
        return self.client.claim_stream(*args, **kwargs)


class DoInOrderWaitTest(ClientTestCase):
    """do_in_order behind another holder answers DUPLICATE once the holder
    completes the sequence: one claim the server holds, or, against a
    dedupd that does not wait (as an older one), polling. With park=True
    too."""

    @classmethod
    def setUpClass(cls):
        pass  # each test starts its own server

    @classmethod
    def tearDownClass(cls):
        pass

    def run_behind_holder(self, server_args, settle_after_sent, **park):
        server = Server(server_args)
        self.addCleanup(server.stop)
        c = self.api.Client(server.addr)
        self.addCleanup(c.close)
        s = unique_key("order")
        holder = c.claim_stream(CONSUMER, s, 1, lease_ttl=60, owner="holder")
        counting, outcome = CountsStreamClaims(c), []
        waiter = threading.Thread(target=lambda: outcome.append(self.api.do_in_order(
            counting, CONSUMER, s, 1, lambda token: self.fail("fn ran"), max_wait=60, **park)))
        waiter.start()
        self.assertTrue(counting.sent.wait(30), "do_in_order never claimed")
        settle_after_sent(counting)
        c.complete_stream(CONSUMER, s, 1, holder.fencing_token)
        waiter.join(60)
        self.assertEqual(len(outcome), 1)
        self.assertTrue(outcome[0].duplicate)
        return counting.claims

    def test_server_waits(self):
        claims = self.run_behind_holder([], lambda counting: time.sleep(0.3))
        self.assertEqual(claims, 1)

    def test_park_mode_server_waits(self):
        claims = self.run_behind_holder([], lambda counting: time.sleep(0.3), park=True,
                                        payload=b"event 1",
                                        released=lambda event: self.fail("nothing was parked"))
        self.assertEqual(claims, 1)

    def test_server_answers_at_once(self):
        def until_polled(counting):
            while counting.claims < 3:
                time.sleep(0.01)
        claims = self.run_behind_holder(["--max-claim-wait", "0"], until_polled)
        self.assertGreaterEqual(claims, 3)


DoInOrderWaitTestAio = aio_twin(DoInOrderWaitTest)
