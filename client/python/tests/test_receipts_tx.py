"""dedupd.receipts' transactions: a serialization failure (40001) is
retried whole from BEGIN, up to max_attempts; an outcome nobody knows (a
COMMIT that failed, CockroachDB's 40003) is never reported as success but
as dedupd.OutcomeUnknown."""

import dedupd
from dedupd import receipts

from .receipt_dbs import ReceiptsTestCase, effect_of, exec_commit, state_of


class AmbiguousSQLState(Exception):
    """What CockroachDB's driver raises for "result is ambiguous"."""
    pgcode = "40003"


class FailingConnection:
    """A connection whose COMMIT commits and then fails (its answer lost),
    or whose statements containing `fail_on` raise `raises` instead of
    running."""

    def __init__(self, conn, commit_lost=False, fail_on=None, raises=None):
        self._conn, self.commit_lost, self.fail_on, self.raises = conn, commit_lost, fail_on, raises

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def commit(self):
        self._conn.commit()
        if self.commit_lost:
            raise ConnectionResetError("the COMMIT's answer was lost")

    def cursor(self):
        cur, outer = self._conn.cursor(), self

        class Cursor:
            def __getattr__(self, name):
                return getattr(cur, name)

            def execute(self, query, params=()):
                if outer.fail_on and outer.fail_on in query:
                    raise outer.raises
                return cur.execute(query, params)
        return Cursor()


class ReceiptsTxTest(ReceiptsTestCase):
    def test_40001_is_retried_from_begin(self):
        """At SERIALIZABLE, the effect's update of a row another
        transaction changed since its snapshot fails with 40001; run()
        rolls back and runs the whole transaction again."""
        b = next(b for b in self.backends() if b.name == "postgres-serializable")
        conn, rival = b.connect(), b.connect()
        receipts.migrate(conn, b.dialect)
        exec_commit(conn, "CREATE TABLE counter (n BIGINT NOT NULL)")
        exec_commit(conn, "INSERT INTO counter VALUES (0)")
        runs = []

        def effect(c):
            runs.append(1)
            cur = c.cursor()
            cur.execute("SELECT n FROM counter")  # takes the snapshot
            if len(runs) == 1:
                exec_commit(rival, "UPDATE counter SET n = n + 10")
            cur.execute("UPDATE counter SET n = n + 1 RETURNING n")
            return str(cur.fetchone()[0])
        r = receipts.Receipts(conn, b.dialect, "c", 60)
        self.assertEqual(r.run("k", 1, effect), b"11")
        self.assertEqual(len(runs), 2)
        self.assertEqual(r.lookup("k"), (1, b"11"))
        # With one attempt, the failure is raised and nothing committed.
        runs.clear()
        one = receipts.Receipts(conn, b.dialect, "c", 60, max_attempts=1)
        with self.assertRaises(Exception) as caught:
            one.run("k2", 1, effect)
        self.assertEqual(caught.exception.pgcode, "40001")
        self.assertIsNone(one.lookup("k2"))
        cur = conn.cursor()
        cur.execute("SELECT n FROM counter")
        self.assertEqual(cur.fetchone()[0], 21)  # the rival's second +10 only
        conn.rollback()

    def test_a_lost_commit_is_an_unknown_outcome(self):
        def test(b):
            conn = FailingConnection(b.connect(), commit_lost=True)
            r = receipts.Receipts(conn, b.dialect, "c", 60)
            with self.assertRaises(dedupd.OutcomeUnknown):
                r.run("k", 1, effect_of(b, "k", 1, "x"))
            conn.commit_lost = False
            # It did commit: settle finds the receipt beside the effect.
            self.assertEqual(r.lookup("k"), (1, b"x"))
            self.assertEqual(state_of(b, conn, "k"), ([(1, "x")], [(1, "x")]))
        self.for_each(test)

    def test_40003_is_never_a_success(self):
        def test(b):
            conn = FailingConnection(b.connect(), fail_on="INSERT INTO dedupd_receipts",
                                     raises=AmbiguousSQLState("result is ambiguous"))
            r = receipts.Receipts(conn, b.dialect, "c", 60)
            with self.assertRaises(dedupd.OutcomeUnknown) as caught:
                r.run("k", 1, effect_of(b, "k", 1, "x"))
            self.assertIsInstance(caught.exception.__cause__, AmbiguousSQLState)
            self.assertEqual(state_of(b, conn, "k"), ([], []))  # rolled back here
        self.for_each(test)
