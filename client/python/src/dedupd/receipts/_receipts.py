"""Receipts: write, run, settle, decide and prune one consumer's receipts
over one DB-API 2 connection."""

from __future__ import annotations

import datetime
from typing import Any, Callable, Optional, Union

from .._proto.dedup.v1 import dedup_pb2
from ..attempt import OutcomeUnknown, Result, to_bytes
from ..reconcile import Complete, Decision, Release
from ._sql import DEFAULT_TABLE, Dialect, check_table, migration, statements
from ._tx import Connection, ambiguous, begin, commit, execute, fetch_one, retryable, rollback

# Run's attempts at a transaction that keeps failing with a serialization
# failure.
DEFAULT_MAX_ATTEMPTS = 5

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

# effect(conn): changes the caller's database in conn's open transaction
# and returns the result to store (bytes, a str, or None for empty).
Effect = Callable[[Any], Result]


class Stale(Exception):
    """A live receipt for the key already exists: the effect already
    happened under another holder. The transaction that tried to write this
    one must roll back, taking its effect with it (run() does)."""


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def migrate(conn: Connection, dialect: Dialect, table: str = DEFAULT_TABLE) -> None:
    """Runs migration version 1 on conn, idempotently: the receipt table,
    then <table>_schema recording the version, each statement in its own
    transaction (CockroachDB's rule for DDL)."""
    check_table(table)
    for stmt in migration(dialect, table):
        begin(conn, dialect)
        try:
            execute(conn, stmt).close()
        except BaseException:
            rollback(conn)
            raise
        commit(conn)


class Receipts:
    """One consumer's receipts in one database, over conn (a psycopg2 or
    sqlite3 connection; one Receipts per connection, one connection per
    thread). ttl is how long a receipt lives, in seconds: the consumer's
    retention of completed records (ttl_from_policy), so that a receipt
    never outlives the record it stands for. now is the clock (an aware
    datetime); max_attempts bounds run()'s attempts on 40001."""

    def __init__(self, conn: Connection, dialect: Dialect, consumer: str,
                 ttl: Union[float, datetime.timedelta], *, table: str = DEFAULT_TABLE,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                 now: Optional[Callable[[], datetime.datetime]] = None) -> None:
        if not isinstance(dialect, Dialect):
            raise TypeError(f"receipts: dialect must be a Dialect, not {dialect!r}")
        ttl = ttl if isinstance(ttl, datetime.timedelta) else datetime.timedelta(seconds=ttl)
        if ttl <= datetime.timedelta(0):
            raise ValueError(f"receipts: ttl must be positive (the consumer's completed "
                             f"retention), got {ttl}")
        if max_attempts <= 0:
            raise ValueError(f"receipts: max_attempts must be positive, got {max_attempts}")
        self.conn = conn
        self.dialect = dialect
        self.consumer = consumer
        self.ttl = ttl
        self.table = check_table(table)
        self.max_attempts = max_attempts
        self._now = now or _utc_now
        self._sql = statements(dialect, self.table)

    def _time(self, t: datetime.datetime) -> Any:
        """t as the dialect stores it: Unix microseconds on SQLite."""
        if t.tzinfo is None:
            raise ValueError("receipts: the clock must return an aware datetime")
        if self.dialect is Dialect.SQLITE:
            return (t - _EPOCH) // datetime.timedelta(microseconds=1)
        return t.astimezone(datetime.timezone.utc)

    def write(self, key: str, token: int, result: Result = b"") -> None:
        """Records, inside conn's open transaction, that the effect of key
        happened under token with result. Raises Stale when a live receipt
        exists: the caller must roll the transaction back."""
        if isinstance(token, bool) or not isinstance(token, int) or token <= 0:
            raise ValueError(f"receipts: fencing token must be a positive int, got {token!r}")
        now = self._now()
        row = fetch_one(self.conn, self._sql.write, (
            self.consumer, key, token, to_bytes(result), self._time(now),
            self._time(now + self.ttl)))
        if row is None:
            raise Stale(f"receipts: a live receipt of {self.consumer}/{key} exists: the effect "
                        "already happened under another holder")

    def run(self, key: str, token: int, effect: Effect) -> bytes:
        """Runs effect(conn) and the receipt of (key, token) in one
        transaction, and returns the result. Retries the whole transaction
        on a serialization failure, at most max_attempts times; Stale (or
        any error of effect) rolls it back and propagates. An outcome nobody
        can know (40003, a COMMIT that failed) raises OutcomeUnknown, which
        do() leaves PENDING for settle to decide."""
        for attempt in range(1, self.max_attempts + 1):
            try:
                begin(self.conn, self.dialect)
            except Exception as e:
                # Nothing begun, so nothing to roll back (a refused
                # connection's own transaction is the caller's).
                if retryable(e) and attempt < self.max_attempts:
                    continue  # SQLite's BEGIN IMMEDIATE met a busy lock
                raise
            try:
                result = to_bytes(effect(self.conn))
                self.write(key, token, result)
                commit(self.conn)
            except BaseException as e:
                rollback(self.conn)
                if ambiguous(e):
                    raise OutcomeUnknown(f"receipts: {self.consumer}/{key}: {e}") from e
                if isinstance(e, Exception) and retryable(e) and attempt < self.max_attempts:
                    continue
                raise
            return result
        raise AssertionError("unreachable: the last attempt returns or raises")

    def effect(self, effect: Effect) -> Callable[..., bytes]:
        """effect as do()'s fn: it runs through run() under the claim's key
        and fencing token."""
        def fn(token: int, attempt: int, *, record: dedup_pb2.Record) -> bytes:
            return self.run(record.key, token, effect)
        return fn

    def lookup(self, key: str) -> Optional[tuple[int, bytes]]:
        """key's live receipt, (fencing token, result), or None."""
        begin(self.conn, self.dialect)
        try:
            row = fetch_one(self.conn, self._sql.settle,
                            (self.consumer, key, self._time(self._now())))
        finally:
            rollback(self.conn)  # it only read
        if row is None:
            return None
        return int(row[0]), bytes(row[1])

    def settle(self, token: int, attempt: int, *, record: dedup_pb2.Record) -> Optional[bytes]:
        """do()'s and reconcile()'s settle: the effect of the record's key
        happened when a live receipt exists, and its result is the
        receipt's; None when there is none. A database error propagates:
        the outcome stays unknown (the claim stays PENDING)."""
        found = self.lookup(record.key)
        return None if found is None else found[1]

    def decide(self, record: dedup_pb2.Record, token: int) -> Decision:
        """reconcile()'s decide: Complete with the receipt's result, or
        Release when the effect never committed."""
        found = self.lookup(record.key)
        return Release() if found is None else Complete(found[1])

    def prune(self, batch: int = 1000) -> int:
        """Deletes the receipts expired by now, of every consumer in the
        table, at most batch per transaction, until none is left; returns
        how many it deleted."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
            raise ValueError(f"receipts: prune batch must be a positive int, got {batch!r}")
        now, deleted = self._time(self._now()), 0
        while True:
            begin(self.conn, self.dialect)
            try:
                cur = execute(self.conn, self._sql.prune, (now, batch))
                n = cur.rowcount
                cur.close()
            except BaseException:
                rollback(self.conn)
                raise
            commit(self.conn)
            deleted += n
            if n < batch:
                return deleted
