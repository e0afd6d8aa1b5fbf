"""The databases the receipts tests run on: SQLite (a file per test, the
standard sqlite3), and PostgreSQL on 127.0.0.1:5432 (user postgres, trust
auth) through Debian's psycopg2 at READ COMMITTED and at SERIALIZABLE
(what CockroachDB always runs at). Each test class gets its own PostgreSQL
database (PostgresClass), made in setUpClass and dropped in
tearDownClass; each test its own tables (fresh()).

Under CI=true a missing psycopg2 or PostgreSQL fails the class; elsewhere
it skips the PostgreSQL backends, saying why.
"""

import os
import shutil
import sqlite3
import tempfile
import unittest
import uuid

from dedupd import receipts

PG_DSN = os.environ.get("DEDUPD_TEST_PG_DSN", "host=127.0.0.1 port=5432 user=postgres")


def _unavailable(why):
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"PostgreSQL is needed under CI=true: {why}")
    raise unittest.SkipTest(why)


class Backend:
    """One database through one driver: connect() opens a new connection
    (one per thread) on it."""

    def __init__(self, name, dialect, connect):
        self.name, self.dialect, self.connect = name, dialect, connect

    def ph(self, query):
        """query with the driver's placeholders (written with ?)."""
        return query if self.dialect is receipts.Dialect.SQLITE else query.replace("?", "%s")


class ReceiptsTestCase(unittest.TestCase):
    """A test class whose for_each(test) runs test(backend) on SQLite and on
    PostgreSQL at READ COMMITTED and SERIALIZABLE, each on fresh tables: the
    migrated receipt table and an empty effects table (the record of every
    effect that committed, read back against the test's model)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            import psycopg2
        except ImportError as e:
            _unavailable(f"psycopg2 is not installed ({e}): apt-get install python3-psycopg2")
        cls._psycopg2 = psycopg2
        cls.dbname = f"receipts_py_{uuid.uuid4().hex[:12]}"
        try:
            admin = psycopg2.connect(PG_DSN + " dbname=postgres")
        except psycopg2.OperationalError as e:
            _unavailable(f"PostgreSQL at {PG_DSN}: {e}")
        admin.autocommit = True
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {cls.dbname}")
        admin.close()
        cls.dir = tempfile.mkdtemp(prefix="dedupd-receipts-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)
        admin = cls._psycopg2.connect(PG_DSN + " dbname=postgres")
        admin.autocommit = True
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {cls.dbname} WITH (FORCE)")
        admin.close()
        super().tearDownClass()

    def setUp(self):
        self._open = []

    def tearDown(self):
        for conn in self._open:
            conn.close()

    def _track(self, conn):
        self._open.append(conn)
        return conn

    def backends(self):
        """Fresh backends for one test: a new SQLite file, and new tables
        in the class's PostgreSQL database (a schema of the test's own)."""
        path = os.path.join(self.dir, f"{uuid.uuid4().hex}.db")
        schema = f"t_{uuid.uuid4().hex[:12]}"
        psycopg2 = self._psycopg2

        def sqlite():
            # The module's own transaction control is left on (its default);
            # the receipts open theirs with BEGIN IMMEDIATE. timeout is the
            # busy timeout: writers queue on SQLite's one write lock.
            conn = self._track(sqlite3.connect(path, timeout=30, check_same_thread=False))
            conn.execute("PRAGMA journal_mode=WAL")
            return conn

        def postgres(isolation):
            def connect():
                conn = self._track(psycopg2.connect(
                    f"{PG_DSN} dbname={self.dbname} options='-c search_path={schema}'"))
                conn.set_session(isolation_level=isolation)
                return conn
            return connect

        setup = psycopg2.connect(f"{PG_DSN} dbname={self.dbname}")
        setup.autocommit = True
        with setup.cursor() as cur:
            cur.execute(f"CREATE SCHEMA {schema}")
        setup.close()
        return [
            Backend("sqlite", receipts.Dialect.SQLITE, sqlite),
            Backend("postgres-read-committed", receipts.Dialect.POSTGRES, postgres("READ COMMITTED")),
            Backend("postgres-serializable", receipts.Dialect.POSTGRES, postgres("SERIALIZABLE")),
        ]

    def for_each(self, test):
        """test(backend) on every backend, after migrating it."""
        backends = self.backends()
        # Both PostgreSQL backends share the test's schema: migrate it once
        # (the second migrate is a no-op) and make the effects table once.
        for b in backends:
            with self.subTest(backend=b.name):
                conn = b.connect()
                receipts.migrate(conn, b.dialect)
                exec_commit(conn, "CREATE TABLE IF NOT EXISTS effects "
                            "(key TEXT NOT NULL, token BIGINT NOT NULL, result BYTEA NOT NULL)")
                exec_commit(conn, "DELETE FROM effects")
                exec_commit(conn, "DELETE FROM dedupd_receipts")
                test(b)


def exec_commit(conn, query, params=()):
    cur = conn.cursor()
    cur.execute(query, params)
    cur.close()
    conn.commit()


def effect_of(backend, key, token, result):
    """An effect that records itself in the effects table, in the
    receipt's transaction, with the result it returns."""
    query = backend.ph("INSERT INTO effects (key, token, result) VALUES (?, ?, ?)")

    def effect(conn):
        cur = conn.cursor()
        cur.execute(query, (key, token, result.encode()))
        cur.close()
        return result.encode()
    return effect


def state_of(backend, conn, key):
    """key's effects and receipt as committed, read directly:
    (effects, [(token, result)] of effects, receipts, [(token, result)] of
    receipts)."""
    cur = conn.cursor()
    cur.execute(backend.ph("SELECT token, result FROM effects WHERE key = ? ORDER BY token"), (key,))
    effects = [(int(t), bytes(r).decode()) for t, r in cur.fetchall()]
    cur.execute(backend.ph("SELECT fencing_token, result FROM dedupd_receipts WHERE key = ?"), (key,))
    rows = [(int(t), bytes(r).decode()) for t, r in cur.fetchall()]
    cur.close()
    conn.rollback()
    return effects, rows


# The Go helper's SQL, which the Python helper's is checked against.
REPO_TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                             "receipts", "testdata")
