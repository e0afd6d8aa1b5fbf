"""The receipt table's SQL: migration version 1 and the three queries, per
dialect. The text is the Go helper's (client/receipts/sql.go) with the
driver's placeholders, so that services in both languages share one table;
client/receipts/testdata holds the migration both are checked against.
"""

from __future__ import annotations

import dataclasses
import enum
import re

# The receipt table's migration version, recorded in <table>_schema.
SCHEMA_VERSION = 1

# The receipt table's name when none is given.
DEFAULT_TABLE = "dedupd_receipts"

# What a configurable table name may be: it is written into the SQL, so it
# is checked rather than quoted.
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,50}")


class Dialect(enum.Enum):
    """The SQL flavour of the caller's database."""
    # PostgreSQL at any isolation level, through psycopg2 (or psycopg).
    POSTGRES = "postgres"
    # CockroachDB: PostgreSQL's SQL; its DDL already runs one statement per
    # transaction, as migrate() does everywhere.
    COCKROACH = "cockroach"
    # SQLite through the standard sqlite3 module; times are INTEGER Unix
    # microseconds.
    SQLITE = "sqlite"


def check_table(name: str) -> str:
    """name, or ValueError when it is not a plain SQL identifier."""
    if not isinstance(name, str) or _TABLE_NAME.fullmatch(name) is None:
        raise ValueError(f"receipts: table name {name!r} is not a plain SQL identifier "
                         "([A-Za-z_][A-Za-z0-9_]*, at most 51 characters)")
    return name


def migration(dialect: Dialect, table: str) -> list[str]:
    """Migration version 1 for dialect: the statements, each to run in its
    own transaction, in order."""
    if dialect is Dialect.SQLITE:
        create = f"""CREATE TABLE IF NOT EXISTS {table} (
\tconsumer      TEXT    NOT NULL,
\tkey           TEXT    NOT NULL,
\tfencing_token INTEGER NOT NULL CHECK (fencing_token > 0),
\tresult        BLOB    NOT NULL,
\trecorded_at   INTEGER NOT NULL,
\texpires_at    INTEGER NOT NULL,
\tPRIMARY KEY (consumer, key)
) WITHOUT ROWID"""
    else:
        create = f"""CREATE TABLE IF NOT EXISTS {table} (
\tconsumer      TEXT        NOT NULL,
\tkey           TEXT        NOT NULL,
\tfencing_token BIGINT      NOT NULL CHECK (fencing_token > 0),
\tresult        BYTEA       NOT NULL,
\trecorded_at   TIMESTAMPTZ NOT NULL,
\texpires_at    TIMESTAMPTZ NOT NULL,
\tPRIMARY KEY (consumer, key)
)"""
    return [
        create,
        f"CREATE TABLE IF NOT EXISTS {table}_schema (version INTEGER PRIMARY KEY)",
        f"INSERT INTO {table}_schema (version) VALUES ({SCHEMA_VERSION}) ON CONFLICT DO NOTHING",
    ]


@dataclasses.dataclass(frozen=True)
class Statements:
    """The receipt's queries for one table and dialect."""
    # (consumer, key, token, result, recorded_at, expires_at) -> the
    # token, or no row when a live receipt exists (the write lost).
    write: str
    # (consumer, key, now) -> the live receipt's token and result.
    settle: str
    # (now, batch) -> deletes at most batch expired receipts.
    prune: str


def statements(dialect: Dialect, table: str) -> Statements:
    # An expired receipt may be replaced: its record is gone from dedupd
    # too, so the key is new again. A live one never is: first commit wins.
    s = Statements(
        write=f"""INSERT INTO {table} (consumer, key, fencing_token, result, recorded_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (consumer, key) DO UPDATE SET
\tfencing_token = excluded.fencing_token, result = excluded.result,
\trecorded_at = excluded.recorded_at, expires_at = excluded.expires_at
WHERE {table}.expires_at <= excluded.recorded_at
RETURNING fencing_token""",
        settle=f"SELECT fencing_token, result FROM {table} WHERE consumer = ? AND key = ? AND expires_at > ?",
        prune=f"""DELETE FROM {table} WHERE (consumer, key) IN (
\tSELECT consumer, key FROM {table} WHERE expires_at <= ? LIMIT ?)""",
    )
    if dialect is Dialect.SQLITE:
        return s  # sqlite3's paramstyle is qmark
    # psycopg2's (and psycopg's) paramstyle is %s; the queries hold no
    # other % to escape.
    return Statements(*(q.replace("?", "%s") for q in (s.write, s.settle, s.prune)))
