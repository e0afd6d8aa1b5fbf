"""The error vocabulary: every reason the server can send (the ErrorReason
enum of proto/dedup/v1/error_reason.proto, read through its descriptor) has
a typed exception here, and the details the real server attaches decode."""

import unittest

import dedupd
from dedupd import error_reason_pb2
from dedupd.errors import class_for_reason

from .clients import SYNC, aio_twin
from .server import Server, unique_key


class ReasonCoverageTest(unittest.TestCase):
    def test_every_reason_the_server_can_send_has_a_class(self):
        values = error_reason_pb2.ErrorReason.DESCRIPTOR.values
        self.assertGreater(len(values), 10, "the enum descriptor lists the reasons")
        for value in values:
            if value.number == 0:  # ERROR_REASON_UNSPECIFIED, never sent
                continue
            with self.subTest(reason=value.name):
                cls = class_for_reason(value.name)
                self.assertIsNotNone(cls, f"the Python client lacks reason {value.name}")
                assert cls is not None
                self.assertTrue(issubclass(cls, dedupd.DedupError))
                self.assertIsNot(cls, dedupd.DedupError, f"{value.name} maps to no specific class")

    def test_unknown_reason_has_no_class(self):
        self.assertIsNone(class_for_reason("NOT_A_DEDUPD_REASON"))
        self.assertIsNone(class_for_reason("ERROR_REASON_UNSPECIFIED"))


class RateLimitedTest(unittest.TestCase):
    """A dedupd allowing one call per consumer per ~17 minutes: the second
    call is refused with RATE_LIMITED and a google.rpc.RetryInfo."""

    api = SYNC

    @classmethod
    def setUpClass(cls):
        cls.server = Server(["--rate-limit", "0.001", "--rate-burst", "1"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_rate_limited_carries_reason_and_retry_after(self):
        with self.api.Client(self.server.addr, timeout=10) as c:
            consumer = unique_key("rl")
            c.claim(consumer, "k1")
            with self.assertRaises(dedupd.ResourceExhausted) as cm:
                c.claim(consumer, "k2")
        err = cm.exception
        self.assertEqual(err.reason, "RATE_LIMITED")
        self.assertEqual(err.code.name, "RESOURCE_EXHAUSTED")
        self.assertIsNotNone(err.retry_after)
        # One token per 1000 s, one just spent: the wait is positive and at
        # most the full refill period.
        self.assertGreater(err.retry_after, 0)
        self.assertLessEqual(err.retry_after, 1000)
        self.assertIsNone(err.record)


RateLimitedTestAio = aio_twin(RateLimitedTest)
