"""Transactions over DB-API 2 connections, and what their errors mean.

DB-API 2 has no BEGIN: psycopg2 opens a transaction with the first
statement (unless the connection is in autocommit mode), and sqlite3, in
its default mode, only before the first INSERT, UPDATE or DELETE, so an
effect's reads would run outside it. begin() therefore opens the
transaction explicitly on SQLite, as BEGIN IMMEDIATE: the transaction will
write its receipt anyway, and taking the write lock up front means two
writers queue on SQLite's busy timeout instead of one failing to upgrade
its read lock (the Go helper's tests open SQLite with _txlock=immediate for
the same reason).
"""

from __future__ import annotations

import contextlib
from typing import Any, Optional, Protocol

from ._sql import Dialect


class Cursor(Protocol):
    """The part of a DB-API 2 cursor the receipts use."""
    rowcount: int

    def execute(self, operation: str, parameters: Any = ..., /) -> Any: ...
    def fetchone(self) -> Any: ...
    def close(self) -> Any: ...


class Connection(Protocol):
    """The part of a DB-API 2 connection the receipts use: psycopg2's and
    sqlite3's both fit."""

    def cursor(self) -> Any: ...
    def commit(self) -> Any: ...
    def rollback(self) -> Any: ...


class OutcomeUnknownCommit(Exception):
    """A COMMIT failed for a reason other than a serialization failure (a
    broken connection, say): the transaction may or may not have
    committed."""


def sql_state(e: Optional[BaseException]) -> str:
    """The SQLSTATE of e or of an exception it was raised from, or "":
    psycopg2 names it pgcode, psycopg sqlstate."""
    seen = 0
    while e is not None and seen < 10:  # a cause chain is short; never loop
        for attr in ("pgcode", "sqlstate"):
            code = getattr(e, attr, None)
            if isinstance(code, str) and code:
                return code
        e, seen = e.__cause__, seen + 1
    return ""


def retryable(e: BaseException) -> bool:
    """A serialization failure (40001, or CockroachDB's legacy CR000) rolled
    the whole transaction back: running it again is safe. So is SQLite's
    SQLITE_BUSY (a lock not had within the busy timeout, or a snapshot too
    old to write on): the statement did nothing and the transaction is
    rolled back before the retry."""
    if sql_state(e) in ("40001", "CR000"):
        return True
    code = getattr(e, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == 5  # SQLITE_BUSY and its extended codes


def ambiguous(e: BaseException) -> bool:
    """The transaction may have committed or not: CockroachDB's 40003
    ("result is ambiguous"), or a COMMIT that failed but not with a
    serialization failure."""
    return sql_state(e) == "40003" or isinstance(e, OutcomeUnknownCommit)


def begin(conn: Connection, dialect: Dialect) -> None:
    """Opens a transaction on conn for run(), migrate(), settle and prune;
    refuses a connection that cannot hold one or already holds one (its
    work would be committed, or lost on a retry, with ours)."""
    if getattr(conn, "autocommit", False) is True:
        raise ValueError("receipts: the connection is in autocommit mode; the effect and "
                         "its receipt need one transaction")
    if dialect is Dialect.SQLITE:
        if getattr(conn, "in_transaction", False):
            if getattr(conn, "autocommit", None) is False:
                return  # Python 3.12's PEP 249 mode: a transaction is always open
            raise ValueError("receipts: the connection already has a transaction open; "
                             "commit or roll it back first")
        execute(conn, "BEGIN IMMEDIATE")
        return
    status = getattr(conn, "get_transaction_status", None)
    if callable(status) and status() != 0:  # psycopg2's TRANSACTION_STATUS_IDLE
        raise ValueError("receipts: the connection already has a transaction open; "
                         "commit or roll it back first")


def commit(conn: Connection) -> None:
    """Commits conn's transaction. A failure that is not a serialization
    failure becomes OutcomeUnknownCommit."""
    try:
        conn.commit()
    except Exception as e:
        rollback(conn)
        if retryable(e):
            raise
        raise OutcomeUnknownCommit(f"receipts: commit: {e}") from e


def rollback(conn: Connection) -> None:
    """Rolls conn's transaction back. A rollback that fails (the connection
    is broken) is not reported: the server drops the transaction with the
    connection, and the error that led here is the one that matters."""
    with contextlib.suppress(Exception):
        conn.rollback()


def execute(conn: Connection, query: str, params: Any = ()) -> Cursor:
    """Runs query on a new cursor of conn and returns the cursor."""
    cur: Cursor = conn.cursor()
    cur.execute(query, params)
    return cur


def fetch_one(conn: Connection, query: str, params: Any) -> Optional[tuple[Any, ...]]:
    """The first row of query, or None."""
    cur = execute(conn, query, params)
    try:
        row = cur.fetchone()
    finally:
        cur.close()
    return None if row is None else tuple(row)
