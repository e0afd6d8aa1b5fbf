"""The life of one event against a running dedupd, as in main.go and
walkthrough.js: claim, complete, replay, a conflict, and a crashed claim
settled by reconciliation. Exits non-zero if an answer differs from what
dedupd promises.

    /usr/bin/python3 -m venv --system-site-packages .venv    # sees python3-grpcio
    .venv/bin/pip install --no-deps --no-build-isolation ./client/python
    .venv/bin/python examples/walkthrough/walkthrough.py

dedupd's address is $DEDUPD_ADDR, or 127.0.0.1:7070. Its consumer,
walkthrough-python, is its own: the reconcile step settles every expired
claim of the consumer, so a shared one would settle another program's.
"""
import os
import time

import dedupd

c = dedupd.Client(os.environ.get("DEDUPD_ADDR", "127.0.0.1:7070"))
event_id = "E42-%d" % time.time_ns()   # fresh per run, so it can run again
event = {"event_id": event_id, "item": "widget", "qty": 3}
digest = dedupd.digest_json(event)     # 0x01 || SHA-256 of the RFC 8785 form

runs = []


def take_stock(token, attempt):
    runs.append(token)                 # your side effect, fenced by token
    return b"stock=97"


# Claim, do the work, record the outcome: one call.
first = dedupd.do(c, "walkthrough-python", event_id, take_stock, digest=digest)
print("first delivery: result=%s replayed=%s" % (first.result.decode(), first.replayed))

# Redelivery: the stored result comes back, take_stock does not run.
again = dedupd.do(c, "walkthrough-python", event_id, take_stock, digest=digest)
print("redelivery: result=%s replayed=%s" % (again.result.decode(), again.replayed))
assert not first.replayed and again.replayed and len(runs) == 1, runs

# Same key, other content: a conflict, with the stored record attached.
try:
    c.claim("walkthrough-python", event_id, digest=dedupd.digest_json({**event, "qty": 4}))
    raise SystemExit("a claim with other content was accepted")
except dedupd.DigestMismatch as err:
    print("other content: %s, stored result=%s" % (err.reason, err.record.result.decode()))

# A whole poll in one claim_batch and one finish_batch, then redelivered:
# every message is replayed and the work does not run again.
poll = ["%s-poll-%d" % (event_id, i) for i in range(5)]
poll_runs = []
for delivery in ("poll", "redelivered poll"):
    outcomes = dedupd.do_batch(c, "walkthrough-python", poll, lambda key, token, attempt: poll_runs.append(key) or b"done")
    assert all(o.error is None for o in outcomes), outcomes
    print("%s of %d: replayed=%d, work ran %d times in all"
          % (delivery, len(poll), sum(o.outcome.replayed for o in outcomes), len(poll_runs)))
assert len(poll_runs) == len(poll), poll_runs

# A worker crashes after claiming (its lease runs out, nothing recorded).
crashed = event_id + "-crashed"
claim = c.claim("walkthrough-python", crashed, digest=dedupd.digest_bytes(crashed.encode()),
                lease_ttl=0.5, owner="worker-that-died")
time.sleep(1)


# Reconcile: for each expired claim, ask your own system what happened.
def decide(record, token):
    effect_happened = False            # look the event up in your database
    return dedupd.Complete(b"stock=94") if effect_happened else dedupd.Release()


settled = [s for s in dedupd.reconcile(c, "walkthrough-python", decide) if s.key == crashed]
record = c.lookup("walkthrough-python", crashed)
released = record.state == dedupd.STATE_RELEASED
print("reconciled: %s released=%s (token %d, the crashed worker had %d)"
      % (crashed, released, record.fencing_token, claim.fencing_token))
assert len(settled) == 1 and released and record.fencing_token == claim.fencing_token + 1, record
print("walkthrough: ok")
