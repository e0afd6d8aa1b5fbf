"""dedupd receipts: a row in the caller's own SQL database, committed in
the caller's own transaction beside the effect, that says "the effect of
(consumer, key) happened under fencing token T with result R". Because the
effect and its receipt commit or roll back together, a takeover holder
settles by asking the database, and do() with receipts needs no
hand-written settle:

    from dedupd import receipts
    conn = psycopg2.connect(...)            # or sqlite3.connect(path)
    receipts.migrate(conn, receipts.Dialect.POSTGRES)
    r = receipts.Receipts(conn, receipts.Dialect.POSTGRES, "inventory",
                          receipts.ttl_from_policy(client, "inventory"))

    def take_stock(conn):                   # in the receipt's transaction
        cur = conn.cursor()
        cur.execute("UPDATE stock SET qty = qty - 1 WHERE item = %s", ("widget",))
        return b"taken"

    dedupd.do(client, "inventory", event_id, r.effect(take_stock), settle=r.settle)

The design is shared with the Go helper (client/receipts), table and all,
so services in both languages can share one receipt table:

  - migrate() creates the receipt table (migration version 1) and records
    the version in <table>_schema, one statement per transaction,
    idempotently;
  - Receipts.write() records the receipt inside the caller's open
    transaction; when a live receipt exists it raises Stale and the caller
    must roll back, taking its effect with it;
  - Receipts.run() (and Receipts.effect(), its form for do()'s fn) runs the
    effect and the receipt in one transaction, retries it whole on
    SQLSTATE 40001, rolls back on Stale, and raises dedupd.OutcomeUnknown
    on 40003 or a failed COMMIT, which do() leaves PENDING;
  - Receipts.settle is do()'s, do_batch()'s and reconcile()'s settle, and
    Receipts.decide reconcile()'s decide;
  - Receipts.prune() deletes expired receipts in bounded batches;
  - ttl_from_policy() reads the consumer's completed retention, the TTL a
    receipt needs so that it never outlives its record.
"""

from ..attempt import OutcomeUnknown
from ._policy import ttl_from_policy
from ._receipts import DEFAULT_MAX_ATTEMPTS, Effect, Receipts, Stale, migrate
from ._sql import DEFAULT_TABLE, SCHEMA_VERSION, Dialect, migration

__all__ = ["Receipts", "Stale", "OutcomeUnknown", "Effect", "Dialect", "migrate", "migration",
           "ttl_from_policy", "DEFAULT_TABLE", "SCHEMA_VERSION", "DEFAULT_MAX_ATTEMPTS"]
