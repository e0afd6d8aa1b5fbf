"""Client against a real dedupd: every Claim outcome and every typed error."""

import time
import unittest

import grpc

import dedupd
from dedupd.client import seconds

from .clients import aio_twin
from .server import ClientTestCase, unique_key

CONSUMER = "py-client"


def take_over(client, consumer, key, digest=b"", lease_ttl=30.0, owner="taker", bound=20.0):
    """Claims key until its current lease runs out and the claim acquires."""
    deadline = time.monotonic() + bound
    while True:
        resp = client.claim(consumer, key, digest=digest, lease_ttl=lease_ttl, owner=owner)
        if resp.outcome != dedupd.OUTCOME_IN_PROGRESS:
            return resp
        if time.monotonic() > deadline:
            raise AssertionError(f"lease on {key} never ran out")
        time.sleep(min(max(seconds(resp.retry_after), 0.01), 0.5))


class ClientTest(ClientTestCase):
    def test_acquire_then_in_progress_then_completed_replay(self):
        c, key, digest = self.client, unique_key(), dedupd.digest_bytes(b"body")
        first = c.claim(CONSUMER, key, digest=digest, lease_ttl=30, owner="w1")
        self.assertEqual(first.outcome, dedupd.OUTCOME_ACQUIRED)
        self.assertEqual(first.fencing_token, 1)
        self.assertEqual(first.record.state, dedupd.STATE_PENDING)
        self.assertEqual(first.record.owner, "w1")

        busy = c.claim(CONSUMER, key, digest=digest)
        self.assertEqual(busy.outcome, dedupd.OUTCOME_IN_PROGRESS)
        self.assertGreater(seconds(busy.retry_after), 0)
        self.assertEqual(busy.fencing_token, 0)

        done = c.complete(CONSUMER, key, first.fencing_token, b"result-1")
        self.assertEqual(done.state, dedupd.STATE_COMPLETED)
        again = c.complete(CONSUMER, key, first.fencing_token, b"result-1")
        self.assertEqual(again.result, b"result-1")  # the same Complete is harmless

        replay = c.claim(CONSUMER, key, digest=digest)
        self.assertEqual(replay.outcome, dedupd.OUTCOME_COMPLETED)
        self.assertEqual(replay.record.result, b"result-1")
        self.assertEqual(c.lookup(CONSUMER, key).state, dedupd.STATE_COMPLETED)

    def test_terminal_reject_is_replayed(self):
        c, key = self.client, unique_key()
        token = c.claim(CONSUMER, key).fencing_token
        rec = c.reject(CONSUMER, key, token, reason="OUT_OF_STOCK", message="3 > 2",
                       detail=b"\x01")
        self.assertEqual(rec.state, dedupd.STATE_REJECTED)
        replay = c.claim(CONSUMER, key)
        self.assertEqual(replay.outcome, dedupd.OUTCOME_REJECTED)
        self.assertEqual(replay.record.rejection.reason, "OUT_OF_STOCK")
        self.assertEqual(replay.record.rejection.message, "3 > 2")
        self.assertEqual(replay.record.rejection.detail, b"\x01")
        self.assertFalse(replay.record.rejection.retryable)

    def test_retryable_reject_releases_for_reacquire(self):
        c, key = self.client, unique_key()
        first = c.claim(CONSUMER, key)
        rec = c.reject(CONSUMER, key, first.fencing_token, reason="TIMEOUT", retryable=True)
        self.assertEqual(rec.state, dedupd.STATE_RELEASED)
        second = c.claim(CONSUMER, key)
        self.assertEqual(second.outcome, dedupd.OUTCOME_ACQUIRED)
        self.assertEqual(second.fencing_token, first.fencing_token + 1)
        self.assertEqual(second.record.attempts, 2)

    def test_digest_mismatch_carries_stored_record(self):
        c, key = self.client, unique_key()
        stored = dedupd.digest_json({"sku": "A", "qty": 3})
        token = c.claim(CONSUMER, key, digest=stored).fencing_token
        c.complete(CONSUMER, key, token, b"ok")
        with self.assertRaises(dedupd.DigestMismatch) as cm:
            c.claim(CONSUMER, key, digest=dedupd.digest_json({"sku": "A", "qty": 4}))
        err = cm.exception
        self.assertEqual(err.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(err.reason, "DIGEST_MISMATCH")
        self.assertEqual(err.metadata["consumer"], CONSUMER)
        self.assertEqual(err.metadata["key"], key)
        self.assertIsNotNone(err.record)
        self.assertEqual(err.record.digest, stored)
        self.assertEqual(err.record.state, dedupd.STATE_COMPLETED)
        self.assertEqual(err.record.result, b"ok")

    def test_lease_lost_after_takeover(self):
        c, key = self.client, unique_key()
        first = c.claim(CONSUMER, key, lease_ttl=0.2, owner="slow")
        second = take_over(c, CONSUMER, key)
        self.assertEqual(second.outcome, dedupd.OUTCOME_ACQUIRED)
        self.assertEqual(second.fencing_token, first.fencing_token + 1)
        for call in (lambda: c.complete(CONSUMER, key, first.fencing_token, b"late"),
                     lambda: c.extend_lease(CONSUMER, key, first.fencing_token, 10),
                     lambda: c.reject(CONSUMER, key, first.fencing_token, reason="X")):
            with self.assertRaises(dedupd.LeaseLost) as cm:
                call()
            self.assertEqual(cm.exception.code, grpc.StatusCode.ABORTED)
            self.assertEqual(cm.exception.record.fencing_token, second.fencing_token)
            self.assertEqual(cm.exception.record.owner, "taker")
        # The one who took over still finishes.
        self.assertEqual(c.complete(CONSUMER, key, second.fencing_token, b"x").state,
                         dedupd.STATE_COMPLETED)

    def test_already_finished(self):
        c, key = self.client, unique_key()
        token = c.claim(CONSUMER, key).fencing_token
        c.complete(CONSUMER, key, token, b"one")
        for call in (lambda: c.complete(CONSUMER, key, token, b"two"),
                     lambda: c.reject(CONSUMER, key, token, reason="NO")):
            with self.assertRaises(dedupd.AlreadyFinished) as cm:
                call()
            self.assertEqual(cm.exception.reason, "ALREADY_FINISHED")
            self.assertEqual(cm.exception.record.result, b"one")

    def test_extend_lease_moves_expiry(self):
        c, key = self.client, unique_key()
        first = c.claim(CONSUMER, key, lease_ttl=5)
        rec = c.extend_lease(CONSUMER, key, first.fencing_token, lease_ttl=600)
        self.assertGreater(rec.lease_expires_at.ToNanoseconds(),
                           first.record.lease_expires_at.ToNanoseconds())

    def test_lookup_not_found(self):
        with self.assertRaises(dedupd.RecordNotFound) as cm:
            self.client.lookup(CONSUMER, unique_key())
        self.assertEqual(cm.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(cm.exception.reason, "RECORD_NOT_FOUND")
        self.assertIsNone(cm.exception.record)

    def test_invalid_field_names_the_field(self):
        with self.assertRaises(dedupd.InvalidRequest) as cm:
            self.client.claim("Not A Consumer", unique_key())
        self.assertEqual(cm.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(cm.exception.reason, "INVALID_FIELD")
        self.assertEqual(cm.exception.metadata["field"], "consumer")

    def test_unreachable_server_is_unavailable(self):
        # Port 1 on loopback has no listener: the call fails fast, untouched.
        with self.api.Client("127.0.0.1:1", timeout=10) as c:
            with self.assertRaises(dedupd.Unavailable) as cm:
                c.lookup(CONSUMER, "k")
        self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE)

    def test_list_records_pages(self):
        c, prefix = self.client, unique_key("list")
        keys = [f"{prefix}-{i}" for i in range(5)]
        for k in keys:
            c.claim(CONSUMER, k)
        first = c.list_records(CONSUMER, key_prefix=prefix, page_size=2)
        self.assertEqual(len(first.records), 2)
        self.assertTrue(first.next_page_token)
        listed = [r.key for r in c.iter_records(CONSUMER, key_prefix=prefix, page_size=2)]
        self.assertEqual(listed, keys)


ClientTestAio = aio_twin(ClientTest)


if __name__ == "__main__":
    unittest.main()
