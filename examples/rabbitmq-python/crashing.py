"""consumer.py with crashes injected at chosen points, for test_crash.py.

consumer.py stays as a user would write it; this runner patches its
gateway, dedupd.do and pika's basic_ack from outside. CRASH_PLAN names a
JSON file {event_id: point}; the first consumer to reach that point for
that event (a marker file in CRASH_MARKS, created exclusively, makes it
the first across all processes) crashes there:

    after_claim        SIGKILL after do() acquired the key, before the charge
    after_effect       SIGKILL after the charge, before do() records it
    after_complete     SIGKILL after Complete, before the ack
    close_on_delivery  close the channel without acking, before the claim
    close_before_ack   close the channel without acking, after Complete

A SIGKILL is the process killing itself with kill -9 (os.kill(getpid(),
SIGKILL)): nothing runs after it, as after a crash, and the point is
exactly the one planned; the test starts a consumer in its place. After a
close the consumer connects again and goes on. USE_SETTLE=0 calls do()
without settle, which must double-charge. Each do() outcome, ack and close
is appended to CONSUMER_LOG as a JSON line.

With WAIT_FOR_GO=1 the process imports everything, then waits for a line
on stdin before it connects: the test keeps such spares ready, so that a
kill costs no start-up time.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

import pika.adapters.blocking_connection as blocking

import consumer
import dedupd

PLAN: dict[str, str] = json.load(open(os.environ["CRASH_PLAN"], encoding="utf-8"))
MARKS = os.environ["CRASH_MARKS"]
LOG = os.environ["CONSUMER_LOG"]
USE_SETTLE = os.environ.get("USE_SETTLE", "1") == "1"


class Reconnect(Exception):
    """Raised out of the pika callback after a close: connect again."""

current: dict[str, str] = {}  # the event being handled (one at a time: prefetch 1)


def first_to_reach(event_id: str, point: str) -> bool:
    if PLAN.get(event_id) != point:
        return False
    try:
        os.close(os.open(os.path.join(MARKS, f"{event_id}.{point}"),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def crash_at(event_id: str, point: str) -> None:
    if first_to_reach(event_id, point):
        os.kill(os.getpid(), signal.SIGKILL)


def close_without_ack(channel: Any, point: str) -> None:
    channel.connection.close()  # RabbitMQ requeues the unacked message at once
    log(closed=current["event_id"], point=point)
    raise Reconnect


def log(**doc: Any) -> None:
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (json.dumps(doc) + "\n").encode())  # one write: whole lines
    finally:
        os.close(fd)


real_charge = consumer.Gateway.charge


def charge(self: consumer.Gateway, event: dict[str, Any]) -> str:
    crash_at(event["event_id"], "after_claim")
    charge_id = real_charge(self, event)
    crash_at(event["event_id"], "after_effect")
    return charge_id


real_do = dedupd.do


def do(client: Any, name: str, key: str, fn: Any, *, settle: Any = None,
       **options: Any) -> dedupd.Outcome:
    out = real_do(client, name, key, fn, settle=settle if USE_SETTLE else None, **options)
    log(event=key, settled=out.settled, replayed=out.replayed, result=out.result.decode(),
        t=time.time())
    return out


real_on_message = consumer.on_message


def on_message(client: Any, gateway: Any, channel: Any, method: Any, body: bytes) -> None:
    event_id = json.loads(body)["event_id"]
    current["event_id"] = event_id
    if first_to_reach(event_id, "close_on_delivery"):
        close_without_ack(channel, "close_on_delivery")
    real_on_message(client, gateway, channel, method, body)


real_ack = blocking.BlockingChannel.basic_ack


def basic_ack(self: Any, delivery_tag: int = 0, multiple: bool = False) -> None:
    event_id = current["event_id"]
    crash_at(event_id, "after_complete")
    if first_to_reach(event_id, "close_before_ack"):
        close_without_ack(self, "close_before_ack")
    real_ack(self, delivery_tag, multiple)
    log(acked=event_id)


consumer.Gateway.charge = charge  # type: ignore[assignment]
dedupd.do = do  # type: ignore[assignment]
consumer.on_message = on_message
blocking.BlockingChannel.basic_ack = basic_ack

if __name__ == "__main__":
    if os.environ.get("WAIT_FOR_GO") == "1":
        sys.stdin.readline()
    while True:
        try:
            consumer.main()
        except Reconnect:
            continue
