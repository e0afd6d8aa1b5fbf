"""A RabbitMQ consumer that charges a payment gateway exactly once per event,
however often the event is delivered and wherever the consumer dies.

Each message is a JSON event {"event_id": ..., "amount": ...}. The consumer
acks by hand, one message at a time, and charges through dedupd.do():

  - fn charges the gateway (the effect, which the gateway does not
    deduplicate) and returns the charge id, stored as the key's result; it
    checks first that its lease still holds, since the gateway cannot be
    fenced with dedupd's token;
  - settle asks the gateway whether the event was charged already. do()
    calls it before fn whenever an earlier consumer held the key and may
    have charged it before dying (attempt above 1): a charge found is
    stored as the result and fn does not run again.

Then it acks or nacks as docs/guarantees.md says for each outcome.

    AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ QUEUE=payments \\
    DEDUPD_ADDR=127.0.0.1:7070 GATEWAY_URL=http://127.0.0.1:8081 \\
    python3 consumer.py
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from typing import Any, Optional

import pika
import pika.spec
from pika.adapters.blocking_connection import BlockingChannel

import dedupd

CONSUMER = os.environ.get("DEDUPD_CONSUMER", "payments")
# Longer than a charge takes; do() extends it while fn runs. A consumer that
# dies holding it blocks the event's redelivery for at most this long.
LEASE_TTL = float(os.environ.get("LEASE_TTL", "30"))

class Gateway:
    """The payment gateway's HTTP API: charge (not idempotent) and the
    lookup of an event's charges."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def charge(self, event: dict[str, Any]) -> str:
        req = urllib.request.Request(
            f"{self.url}/charges", method="POST", headers={"Content-Type": "application/json"},
            data=json.dumps({"event_id": event["event_id"], "amount": event["amount"]}).encode())
        with urllib.request.urlopen(req, timeout=10) as resp:
            return str(json.load(resp)["id"])

    def find_charge(self, event_id: str) -> Optional[str]:
        query = urllib.parse.urlencode({"event_id": event_id})
        with urllib.request.urlopen(f"{self.url}/charges?{query}", timeout=10) as resp:
            charges = json.load(resp)["charges"]
        return str(charges[0]) if charges else None


def process(client: dedupd.Client, gateway: Gateway, event: dict[str, Any]) -> dedupd.Outcome:
    """Charges the event once; returns the stored outcome (its result is the
    charge id)."""

    def charge(token: int, attempt: int, *, lease: dedupd.Lease) -> str:
        # The gateway takes no fencing token: once the lease is lost another
        # consumer may be charging this event, so do not start a charge.
        if lease.lost:
            raise RuntimeError("lease lost before the charge")
        return gateway.charge(event)

    def settle(token: int, attempt: int) -> Optional[str]:
        # An earlier holder may have charged and died before recording it:
        # the gateway knows. None means "not charged": do() runs charge.
        return gateway.find_charge(event["event_id"])

    return dedupd.do(client, CONSUMER, event["event_id"], charge, settle=settle,
                     digest=dedupd.digest_json(event), lease_ttl=LEASE_TTL)


def on_message(client: dedupd.Client, gateway: Gateway, channel: BlockingChannel,
               method: pika.spec.Basic.Deliver, body: bytes) -> None:
    tag = method.delivery_tag
    try:
        event = json.loads(body)
        str(event["event_id"]), int(event["amount"])
    except (ValueError, KeyError, TypeError):
        channel.basic_nack(tag, requeue=False)  # not an event: dead-letter it
        return
    try:
        process(client, gateway, event)
    except (dedupd.Rejected, dedupd.DigestMismatch):
        # Refused for good, or the same id with other content: redelivering
        # cannot help. Dead-letter it (the queue's x-dead-letter-exchange,
        # if it has one; else RabbitMQ drops it).
        channel.basic_nack(tag, requeue=False)
    except Exception:
        # Nobody recorded an outcome: settle failed (the claim stays
        # PENDING, settle runs again after the lease), the charge failed
        # (released: the next attempt runs settle first), the key was in
        # progress elsewhere past max_wait, the lease was lost, or dedupd
        # was unreachable. Redeliver.
        channel.basic_nack(tag, requeue=True)
    else:
        # Completed now, replayed from an earlier delivery, or settled.
        channel.basic_ack(tag)


def main() -> None:
    client = dedupd.Client(os.environ.get("DEDUPD_ADDR", "127.0.0.1:7070"))
    gateway = Gateway(os.environ.get("GATEWAY_URL", "http://127.0.0.1:8081"))
    params = pika.URLParameters(os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"))
    queue = os.environ.get("QUEUE", "payments")
    connection = pika.BlockingConnection(params)
    channel = connection.channel()
    channel.queue_declare(queue=queue, passive=True)  # the publisher declares it
    channel.basic_qos(prefetch_count=1)  # one unacked message per consumer
    channel.basic_consume(queue, lambda ch, method, props, body: on_message(
        client, gateway, ch, method, body), auto_ack=False)
    try:
        channel.start_consuming()
    finally:
        client.close()


if __name__ == "__main__":
    main()
