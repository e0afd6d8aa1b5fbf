"""Park mode against a real dedupd: early events parked and run in order
as the gap fills; a server without park mode refused clearly; the lease
extended while a released event runs; a consumer killed (SIGKILL) at each
point between park, release, effect and completion, picked up by
do_parked, with every effect once. Each runs against dedupd and
dedupd.aio."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import dedupd

from .clients import aio_twin
from .server import ClientTestCase, server, unique_key

CONSUMER = "py-park"
LEASE = 0.5  # seconds: the crashed holder's lease, waited out by do_parked


def payload_of(seq):
    return f"event-{seq}".encode()


class Ledger:
    """The non-idempotent fake effect, shared by processes: each effect
    appends its sequence as one line of a file, so an effect done twice
    shows, whoever did it, and survives kill -9."""

    def __init__(self, path):
        self.path = path

    def apply(self, seq):
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{seq}\n".encode())  # one write: whole or absent
        finally:
            os.close(fd)

    def lines(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                return f.read().split()
        except FileNotFoundError:
            return []

    def has(self, seq):
        return str(seq) in self.lines()

    def released(self, event):
        if event.payload != payload_of(event.sequence):
            raise dedupd.Terminal("WRONG_PAYLOAD", f"{event.sequence}: {event.payload!r}")
        self.apply(event.sequence)

    def options(self, seq, released=None):
        """do_in_order's park options, with this ledger as effect and settle."""
        return dict(park=True, payload=payload_of(seq), released=released or self.released,
                    settle=lambda token: self.has(seq),
                    settle_released=lambda event: self.has(event.sequence))


class ParkTest(ClientTestCase):
    def test_early_events_are_parked_and_run_in_order(self):
        s, applied = unique_key("order"), []

        def released(event):
            applied.append((event.sequence, event.payload))

        def deliver(seq):
            return self.api.do_in_order(self.client, CONSUMER, s, seq,
                                      lambda token: applied.append((seq, payload_of(seq))),
                                      park=True, payload=payload_of(seq), released=released)

        for seq in (4, 3, 2, 3):
            res = deliver(seq)
            self.assertTrue(res.parked, seq)
            self.assertFalse(res.duplicate)
        self.assertEqual(applied, [])
        res = deliver(1)
        self.assertEqual(applied, [(n, payload_of(n)) for n in (1, 2, 3, 4)])
        self.assertEqual(res.released, [2, 3, 4])
        self.assertIsNone(res.unfinished)
        self.assertEqual(res.stream.high_water, 4)
        self.assertTrue(deliver(3).duplicate)

    def test_server_without_park_mode_is_refused_clearly(self):
        s, claims, ran = unique_key("order"), [], []

        class IgnoresPark:
            """An older dedupd: the park fields are dropped on the way."""

            def __init__(self, client):
                self.client = client

            def __getattr__(self, name):
                return getattr(self.client, name)

            def claim_stream(self, *args, park=False, payload=b"", **kwargs):
                claims.append(park)
                return self.client.claim_stream(*args, **kwargs)

        with self.assertRaises(dedupd.ParkUnsupported) as cm:
            self.api.do_in_order(IgnoresPark(self.client), CONSUMER, s, 2, ran.append, park=True,
                               payload=payload_of(2), released=ran.append)
        self.assertIsInstance(cm.exception.__cause__, dedupd.SequenceGap)
        self.assertEqual((claims, ran), ([True], []))
        with self.assertRaises(ValueError):
            self.api.do_in_order(self.client, CONSUMER, s, 2, ran.append, park=True)

    def test_lease_is_extended_while_a_released_event_runs(self):
        s, seen = unique_key("order"), []

        def slow(event):
            for _ in range(5):  # 2.5 leases of 1 s
                time.sleep(0.5)
                other = self.client.claim_stream(CONSUMER, s, event.sequence)
                seen.append((other.outcome, self.client.claim_parked(CONSUMER, s).HasField("event")))

        self.api.do_in_order(self.client, CONSUMER, s, 2, None, park=True, payload=b"2",
                             released=slow, lease_ttl=1)
        res = self.api.do_in_order(self.client, CONSUMER, s, 1, lambda token: None, park=True,
                                   released=slow, lease_ttl=1)
        self.assertEqual(res.released, [2])
        self.assertEqual(seen, [(dedupd.STREAM_OUTCOME_IN_PROGRESS, False)] * 5)


class CrashTest(ClientTestCase):
    """Events 1..4 of a stream; a child process delivers one and is killed
    at the crash point without acking, so its message is delivered again
    here, and do_parked takes over what it held once the lease ran out."""

    def run_crash(self, crash):
        with tempfile.TemporaryDirectory() as tmp:
            ledger, s = Ledger(os.path.join(tmp, "ledger")), unique_key(crash)
            child, before, after = 1, [2, 3, 4], [1]
            if crash == "after-park":
                child, before, after = 3, [], [3, 2, 4, 1]

            def deliver(seq):
                res = self.api.do_in_order(self.client, CONSUMER, s, seq,
                                           lambda token: ledger.apply(seq), lease_ttl=LEASE,
                                           **ledger.options(seq))
                self.assertIsNone(res.unfinished_error)

            for seq in before:
                deliver(seq)
            orders = {"addr": server().addr, "stream": s, "sequence": child, "crash": crash,
                      "ledger": ledger.path}
            proc = subprocess.run([sys.executable, "-m", "tests.park_child", json.dumps(orders)],
                                  cwd=os.path.dirname(os.path.dirname(__file__)),
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, -signal.SIGKILL, proc.stderr)
            for seq in after:
                deliver(seq)
            picked = 0
            while self.client.get_stream(CONSUMER, s).high_water < 4:
                res = self.api.do_parked(self.client, CONSUMER, ledger.released, stream=s,
                                       settle=lambda event: ledger.has(event.sequence))
                self.assertIsNone(res.unfinished_error)
                picked += len(res.released)
                if not res.found:
                    time.sleep(0.05)  # the killed holder's lease has not run out yet
            self.assertEqual(ledger.lines(), ["1", "2", "3", "4"])
            return picked

    def test_every_crash_point(self):
        for crash, picked_up in [("after-park", False), ("delivered-after-effect", False),
                                 ("after-release", True), ("before-effect", True),
                                 ("after-effect", True), ("after-completion", True)]:
            with self.subTest(crash=crash):
                picked = self.run_crash(crash)
                self.assertEqual(picked > 0, picked_up, f"{picked} picked up")


# The same against dedupd.aio (the killed child stays a blocking client).
ParkTestAio = aio_twin(ParkTest)
CrashTestAio = aio_twin(CrashTest)


if __name__ == "__main__":
    unittest.main()
