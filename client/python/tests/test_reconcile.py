"""reconcile() and ListRecords against a real dedupd: claims whose holder
crashed are found, taken over and settled as the caller's system says."""

import time
import unittest

import dedupd

from .clients import aio_twin
from .server import ClientTestCase, unique_key

CONSUMER = "py-reconcile"


def wait_expired(client, consumer, keys, bound=20.0):
    """Waits until ListRecords lists every key as an expired claim."""
    deadline = time.monotonic() + bound
    while True:
        listed = {r.key for r in client.iter_records(consumer, lease_expired=True)}
        if set(keys) <= listed:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"claims never listed as expired: {set(keys) - listed}")
        time.sleep(0.05)


class ReconcileTest(ClientTestCase):
    def test_crashed_claims_are_settled(self):
        c = self.client
        consumer = f"{CONSUMER}-{unique_key('c')[-12:]}"
        crashed = {name: c.claim(consumer, name, digest=dedupd.digest_bytes(name),
                                 lease_ttl=0.2, owner="crashed")
                   for name in ("effect-done", "effect-refused", "effect-missing")}
        live = c.claim(consumer, "still-working", lease_ttl=600)
        finished = c.claim(consumer, "finished")
        c.complete(consumer, "finished", finished.fencing_token, b"ok")
        wait_expired(c, consumer, crashed)

        # What the caller's own system says happened to each crashed claim.
        truth = {"effect-done": dedupd.Complete(b"found in orders table"),
                 "effect-refused": dedupd.Reject("CUSTOMER_GONE", "account closed"),
                 "effect-missing": dedupd.Release()}
        seen = []

        def decide(record, token):
            seen.append((record.key, record.owner, token))
            return truth[record.key]

        settled = self.api.reconcile(c, consumer, decide, page_size=2)
        self.assertEqual(sorted(s.key for s in settled), sorted(crashed))
        self.assertEqual(sorted(k for k, _, _ in seen), sorted(crashed))
        for key, owner, token in seen:
            self.assertEqual(owner, "reconciler")
            self.assertEqual(token, crashed[key].fencing_token + 1)

        states = {k: c.lookup(consumer, k) for k in crashed}
        self.assertEqual(states["effect-done"].state, dedupd.STATE_COMPLETED)
        self.assertEqual(states["effect-done"].result, b"found in orders table")
        self.assertEqual(states["effect-refused"].state, dedupd.STATE_REJECTED)
        self.assertEqual(states["effect-refused"].rejection.reason, "CUSTOMER_GONE")
        self.assertEqual(states["effect-missing"].state, dedupd.STATE_RELEASED)

        # The crashed holder, waking up, is fenced out.
        with self.assertRaises(dedupd.LeaseLost):
            c.complete(consumer, "effect-done", crashed["effect-done"].fencing_token, b"x")
        # Nothing is left to reconcile; the live claim was never touched.
        self.assertEqual(self.api.reconcile(c, consumer, decide), [])
        self.assertEqual(c.lookup(consumer, "still-working").fencing_token, live.fencing_token)
        # The released key runs again on redelivery.
        redelivered = c.claim(consumer, "effect-missing",
                              digest=dedupd.digest_bytes("effect-missing"))
        self.assertEqual(redelivered.outcome, dedupd.OUTCOME_ACQUIRED)

    def test_decide_failure_releases_and_propagates(self):
        c = self.client
        consumer = f"{CONSUMER}-{unique_key('f')[-12:]}"
        first = c.claim(consumer, "k", lease_ttl=0.2)
        wait_expired(c, consumer, ["k"])

        def decide(record, token):
            raise RuntimeError("orders database down")

        with self.assertRaises(RuntimeError):
            self.api.reconcile(c, consumer, decide)
        rec = c.lookup(consumer, "k")
        self.assertEqual(rec.state, dedupd.STATE_RELEASED)
        self.assertEqual(rec.fencing_token, first.fencing_token + 1)


ReconcileTestAio = aio_twin(ReconcileTest)


if __name__ == "__main__":
    unittest.main()
