"""consumer.py on a real RabbitMQ and a real dedupd, with kill -9 at every
crash point: every event is charged exactly once, and without settle the
same run double-charges.

Each run starts a dedupd on a fresh embedded store (DEDUPD_BIN, else one is
built with go build), a fake gateway in this process that is not idempotent
and counts charges per event id (fake_gateway.py), and declares a fresh
queue; it publishes EVENTS events with stable ids plus DUPLICATES second
copies, then keeps CONSUMERS consumer processes (crashing.py: consumer.py
with crashes injected) running, putting a fresh one in the place of each
one killed (from SPARES started ahead, so a kill costs no start-up time),
until every message was acked. PER_POINT planned events crash at each point that
crashing.py lists, once each, so the figures are known in advance.

    DEDUPD_BIN=... python3 -m unittest -v test_crash    # from this directory

RabbitMQ must be up at AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/).
"""

from __future__ import annotations

import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from typing import Any

import pika

import dedupd
from fake_gateway import FakeGateway

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
AMQP_URL = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")

EVENTS = 300
DUPLICATES = 30
PER_POINT = 8
CONSUMERS = 4
SPARES = 2
LEASE_TTL = 3.0  # seconds a takeover waits after a consumer died holding a key
KILL_POINTS = ("after_claim", "after_effect", "after_complete")
CLOSE_POINTS = ("close_on_delivery", "close_before_ack")
# A run that is not done by then is stuck (a bug, not a slow machine): it
# fails with what it saw instead of hanging CI.
STUCK_AFTER = 600.0


class Dedupd:
    """dedupd serve on the embedded store in a temporary directory."""

    def __init__(self, directory: str) -> None:
        binary = os.environ.get("DEDUPD_BIN")
        if not binary:
            binary = os.path.join(directory, "dedupd")
            subprocess.run(["go", "build", "-o", binary, "./cmd/dedupd"], cwd=REPO, check=True)
        ready = os.path.join(directory, "ready")
        self.log = open(os.path.join(directory, "dedupd.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir",
             os.path.join(directory, "data"), "--ready-file", ready],
            stdout=subprocess.DEVNULL, stderr=self.log)
        while not os.path.exists(ready):  # written whole once dedupd serves
            if self.proc.poll() is not None:
                raise RuntimeError(f"dedupd exited: see {self.log.name}")
            time.sleep(0.02)
        with open(ready, encoding="utf-8") as f:
            self.addr = f.readline().strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


class Run:
    """One crash-injected run; its figures once run() returns."""

    def __init__(self, workdir: str, addr: str, use_settle: bool) -> None:
        self.dir = workdir
        self.addr = addr
        self.use_settle = use_settle
        self.name = f"payments-{uuid.uuid4().hex[:12]}"  # dedupd consumer and queue
        self.gateway = FakeGateway()
        rng = random.Random(18)
        self.events: list[dict[str, Any]] = [{"event_id": f"evt-{i:04d}", "amount": rng.randint(1, 500)}
                       for i in range(EVENTS)]
        self.messages = self.events + rng.sample(self.events, DUPLICATES)
        rng.shuffle(self.messages)
        self.published = collections.Counter(e["event_id"] for e in self.messages)
        planned = rng.sample([e["event_id"] for e in self.events],
                             PER_POINT * (len(KILL_POINTS) + len(CLOSE_POINTS)))
        points = [p for p in KILL_POINTS + CLOSE_POINTS for _ in range(PER_POINT)]
        self.plan = dict(zip(planned, points))
        self.exits: collections.Counter[int] = collections.Counter()
        self.starts = 0

    def run(self) -> None:
        url = self.gateway.serve()
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = connection.channel()
        channel.queue_declare(queue=self.name)
        try:
            for ev in self.messages:
                channel.basic_publish("", self.name, json.dumps(ev).encode())
            self._consume(url)
        finally:
            channel.queue_delete(queue=self.name)
            connection.close()
            self.gateway.stop()

    def _consume(self, gateway_url: str) -> None:
        marks = os.path.join(self.dir, "marks")
        os.makedirs(marks)
        plan = os.path.join(self.dir, "plan.json")
        with open(plan, "w", encoding="utf-8") as f:
            json.dump(self.plan, f)
        self.log = os.path.join(self.dir, "consumers.log")
        env = dict(os.environ, CRASH_PLAN=plan, CRASH_MARKS=marks, CONSUMER_LOG=self.log,
                   USE_SETTLE="1" if self.use_settle else "0", AMQP_URL=AMQP_URL,
                   QUEUE=self.name, DEDUPD_ADDR=self.addr, GATEWAY_URL=gateway_url,
                   DEDUPD_CONSUMER=self.name, LEASE_TTL=str(LEASE_TTL))
        stderr = open(os.path.join(self.dir, "consumers.stderr"), "ab")

        def spare() -> subprocess.Popen[bytes]:
            self.starts += 1
            return subprocess.Popen([sys.executable, os.path.join(HERE, "crashing.py")],
                                    env=dict(env, WAIT_FOR_GO="1"), stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=stderr)

        def go(proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
            return proc

        spares = [spare() for _ in range(SPARES)]
        procs = [go(spare()) for _ in range(CONSUMERS)]
        began = time.monotonic()
        try:
            while not self._all_acked():
                for i, proc in enumerate(procs):
                    if proc.poll() is not None:
                        self.exits[proc.returncode] += 1
                        assert proc.stdin is not None
                        proc.stdin.close()
                        procs[i] = go(spares.pop(0))
                        spares.append(spare())
                if time.monotonic() - began > STUCK_AFTER:
                    raise AssertionError(f"stuck: not every message acked; see {self.dir}")
                time.sleep(0.05)
        finally:
            for proc in procs + spares:
                proc.kill()
                proc.wait()
                assert proc.stdin is not None
                proc.stdin.close()
            stderr.close()
        self.seconds = time.monotonic() - began

    def lines(self) -> list[dict[str, Any]]:
        try:
            with open(self.log, encoding="utf-8") as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []

    def _all_acked(self) -> bool:
        acked = collections.Counter(d["acked"] for d in self.lines() if "acked" in d)
        return all(acked[k] >= n for k, n in self.published.items())

    def check(self, client: dedupd.Client) -> tuple[dict[str, int], list[str]]:
        """The run's figures, and every way it broke the promise."""
        charges = self.gateway.snapshot()
        ids: list[str] = [e["event_id"] for e in self.events]
        records = {}
        for i in range(0, len(ids), 100):
            for key, res in zip(ids[i:i + 100], client.lookup_batch(self.name, ids[i:i + 100])):
                records[key] = res.value
        pending = list(client.iter_records(self.name, states=[dedupd.STATE_PENDING]))
        wrong = []
        for key in ids:
            made, rec = charges.get(key, []), records[key]
            if len(made) != 1:
                wrong.append(f"{key} charged {len(made)} times: {made}")
            if rec is None or rec.state != dedupd.STATE_COMPLETED:
                wrong.append(f"{key} not COMPLETED: {rec}")
            elif made and rec.result.decode() != made[0]:
                wrong.append(f"{key} stored {rec.result!r}, charged {made}")
        wrong += [f"{r.key} left PENDING" for r in pending]
        outcomes = [d for d in self.lines() if "event" in d]
        figures = {
            "events": len(ids),
            "messages": len(self.messages),
            "kills": self.exits[-9],  # SIGKILL
            "closes": sum(1 for d in self.lines() if "closed" in d),
            "other exits": sum(n for rc, n in self.exits.items() if rc != -9),
            "takeovers": sum(r.attempts - 1 for r in records.values() if r is not None),
            "settle hits": sum(1 for d in outcomes if d["settled"]),
            "replays": sum(1 for d in outcomes if d["replayed"]),
            "double effects": sum(1 for made in charges.values() if len(made) > 1),
            "seconds": round(self.seconds),
        }
        return figures, wrong


class CrashTest(unittest.TestCase):
    dir: str
    server: Dedupd
    client: dedupd.Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp(prefix="dedupd-rabbitmq-")
        cls.server = Dedupd(cls.dir)
        cls.client = dedupd.Client(cls.server.addr)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def crash_run(self, use_settle: bool) -> tuple[dict[str, int], list[str]]:
        workdir = tempfile.mkdtemp(prefix="run-", dir=self.dir)
        run = Run(workdir, self.server.addr, use_settle)
        run.run()
        figures, wrong = run.check(self.client)
        label = "with settle" if use_settle else "without settle"
        print(f"\nrabbitmq-python {label}: " + ", ".join(f"{k} {v}" for k, v in figures.items()),
              file=sys.stderr)
        with open(os.path.join(workdir, "consumers.stderr"), encoding="utf-8") as f:
            self.assertEqual(figures["other exits"], 0, f.read())
        self.assertEqual(figures["kills"], PER_POINT * len(KILL_POINTS))
        self.assertEqual(figures["closes"], PER_POINT * len(CLOSE_POINTS))
        return figures, wrong

    def test_with_settle_every_event_is_charged_exactly_once(self) -> None:
        figures, wrong = self.crash_run(use_settle=True)
        self.assertEqual(wrong, [])
        # Every kill after the charge was settled from the gateway's lookup.
        self.assertGreaterEqual(figures["settle hits"], PER_POINT)
        self.assertGreaterEqual(figures["takeovers"], 2 * PER_POINT)

    def test_without_settle_a_kill_after_the_charge_charges_twice(self) -> None:
        figures, wrong = self.crash_run(use_settle=False)
        # Each event killed after its charge is taken over and charged again.
        self.assertEqual(figures["double effects"], PER_POINT)
        self.assertTrue(any("charged 2 times" in w for w in wrong), wrong)


if __name__ == "__main__":
    unittest.main()
