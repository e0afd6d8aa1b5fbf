"""Streams against a real dedupd: a stream claimed in order, a duplicate
skipped, a gap refused with the expected sequence; do_in_order under a
redelivering loop; poison events and releases."""

import unittest

import dedupd

from .server import ClientTestCase, unique_key

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
                res = dedupd.do_in_order(self.client, CONSUMER, s, seq,
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
            dedupd.do_in_order(c, CONSUMER, s, 1, boom)
        self.assertEqual(c.get_stream(CONSUMER, s).in_flight, 0)

        def poison(token):
            raise dedupd.Terminal("UNPARSEABLE", "bad payload")

        with self.assertRaises(dedupd.StreamRejected) as cm:
            dedupd.do_in_order(c, CONSUMER, s, 1, poison)
        self.assertEqual(cm.exception.stream.high_water, 1)
        self.assertEqual(cm.exception.stream.last_rejection.reason, "UNPARSEABLE")
        res = dedupd.do_in_order(c, CONSUMER, s, 2, lambda token: None)
        self.assertEqual(res.stream.high_water, 2)


if __name__ == "__main__":
    unittest.main()
