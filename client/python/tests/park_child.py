"""A consumer process that test_park kills: it delivers one event with
do_in_order(park=True) and SIGKILLs itself at the crash point it is told,
after the server answered the call before it. Exit status 3 means it
never reached the point.

    python -m tests.park_child '{"addr": ..., "stream": ..., "sequence": 1,
                                 "crash": "after-effect", "ledger": path}'
"""

import json
import os
import signal
import sys

import dedupd

from .test_park import CONSUMER, LEASE, Ledger


def die():
    os.kill(os.getpid(), signal.SIGKILL)


class Crashing:
    """The client, dying right after the reply that reaches the crash
    point: a PARKED claim, or the completion of the first released event."""

    def __init__(self, client, crash, sequence):
        self.client, self.crash, self.sequence = client, crash, sequence

    def __getattr__(self, name):
        return getattr(self.client, name)

    def claim_stream(self, *args, **kwargs):
        resp = self.client.claim_stream(*args, **kwargs)
        if self.crash == "after-park" and resp.outcome == dedupd.STREAM_OUTCOME_PARKED:
            die()
        return resp

    def complete_stream_next(self, consumer, stream, sequence, *args, **kwargs):
        resp = self.client.complete_stream_next(consumer, stream, sequence, *args, **kwargs)
        if ((self.crash == "after-release" and sequence == self.sequence and resp.HasField("next"))
                or (self.crash == "after-completion" and sequence == self.sequence + 1)):
            die()
        return resp


def main(orders):
    crash, seq, ledger = orders["crash"], orders["sequence"], Ledger(orders["ledger"])

    def released(event):
        if crash == "before-effect":
            die()
        ledger.released(event)
        if crash == "after-effect":
            die()

    def fn(token):
        ledger.apply(seq)
        if crash == "delivered-after-effect":
            die()

    with dedupd.Client(orders["addr"]) as c:
        res = dedupd.do_in_order(Crashing(c, crash, seq), CONSUMER, orders["stream"], seq, fn,
                                 **ledger.options(seq, released), lease_ttl=LEASE)
    print(f"reached no crash point ({crash}): {res}", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
