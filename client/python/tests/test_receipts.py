"""dedupd.receipts against real PostgreSQL (READ COMMITTED and
SERIALIZABLE) and SQLite: the receipt commits with the effect or not at
all, a live receipt fences every later holder (first commit wins), a stale
holder's transaction rolls back with its effect, expired receipts neither
settle nor survive prune, and the SQL is the Go helper's."""

import datetime
import os
import random
import threading
import time
import unittest

from dedupd import receipts

from .receipt_dbs import REPO_TESTDATA, ReceiptsTestCase, effect_of, state_of

BASE = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


class ReceiptsTest(ReceiptsTestCase):
    """Every test here on every backend; one PostgreSQL database for the
    class (making one costs seconds)."""

    def test_migrate_is_idempotent_and_versioned(self):
        def test(b):
            conn = b.connect()
            receipts.migrate(conn, b.dialect)  # a second time: nothing changes
            cur = conn.cursor()
            cur.execute("SELECT count(*), max(version) FROM dedupd_receipts_schema")
            self.assertEqual(tuple(cur.fetchone()), (1, receipts.SCHEMA_VERSION))
            conn.rollback()
            with self.assertRaises(ValueError):
                receipts.migrate(conn, b.dialect, "receipts; DROP TABLE effects")
        self.for_each(test)
    def test_one_effect_per_key_whatever_the_interleaving(self):
        """Holders with distinct tokens race over a few keys, each on its
        own connection. The model counts the runs that returned; the
        database must hold exactly those effects, one per key, each beside
        its own receipt, and every other run ended in Stale."""
        keys, holders = 5, 4

        def test(b):
            model, failures, lock = {}, [], threading.Lock()

            def holder(key, token):
                r = receipts.Receipts(b.connect(), b.dialect, "c", 3600, max_attempts=50)
                time.sleep(random.uniform(0, 0.003))
                try:
                    r.run(key, token, effect_of(b, key, token, f"r{token}"))
                except receipts.Stale:
                    return
                except Exception as e:  # noqa: BLE001  (reported below)
                    with lock:
                        failures.append(e)
                    return
                with lock:
                    model.setdefault(key, []).append(token)
            threads = [threading.Thread(target=holder, args=(f"k{k}", k * holders + h + 1))
                       for k in range(keys) for h in range(holders)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(failures, [])
            conn = b.connect()
            for k in range(keys):
                key = f"k{k}"
                self.assertEqual(len(model.get(key, [])), 1, (key, model))
                won = model[key][0]
                self.assertEqual(state_of(b, conn, key), ([(won, f"r{won}")], [(won, f"r{won}")]))
        self.for_each(test)

    def test_stale_holder_rolls_back_with_its_effect(self):
        """Two holders run their effects on one key at once, the newer one
        held open mid-transaction (it has written its effect and another
        key's receipt). Whichever commits its receipt first stands; the
        other must end in Stale with its effect rolled back, whatever it
        waited on (a row lock, a serialization failure, SQLite's write
        lock). A later holder loses the same way."""
        def test(b):
            newer_r = receipts.Receipts(b.connect(), b.dialect, "c", 3600, max_attempts=50)
            stale_r = receipts.Receipts(b.connect(), b.dialect, "c", 3600, max_attempts=50)
            written, release = threading.Event(), threading.Event()
            errors = {}

            def newer_effect(conn):
                res = effect_of(b, "E1", 2, "new")(conn)
                newer_r.write("E0", 2, res)  # the same transaction writes a receipt first
                written.set()
                release.wait()
                return res

            def run(name, r, token, effect):
                try:
                    r.run("E1", token, effect)
                    errors[name] = None
                except Exception as e:  # noqa: BLE001  (checked below)
                    errors[name] = e
            newer = threading.Thread(target=run, args=("newer", newer_r, 2, newer_effect))
            newer.start()
            self.assertTrue(written.wait(30))
            stale = threading.Thread(target=run, args=("stale", stale_r, 1,
                                                       effect_of(b, "E1", 1, "old")))
            stale.start()
            time.sleep(0.05)  # let the stale holder reach its write (or its lock wait)
            release.set()
            newer.join()
            stale.join()
            if errors["newer"] is None and isinstance(errors["stale"], receipts.Stale):
                want = (2, "new")
            elif errors["stale"] is None and isinstance(errors["newer"], receipts.Stale):
                want = (1, "old")
            else:
                self.fail(f"newer {errors['newer']!r}, stale {errors['stale']!r}: want one "
                          "to commit and the other Stale")
            conn = b.connect()
            self.assertEqual(state_of(b, conn, "E1"), ([want], [want]))
            with self.assertRaises(receipts.Stale):
                stale_r.run("E1", 3, effect_of(b, "E1", 3, "later"))
            self.assertEqual(state_of(b, conn, "E1"), ([want], [want]))
            # A caller's own transaction: write() raises Stale and the caller
            # rolls back its effect with it.
            effect_of(b, "E1", 4, "own")(conn)
            with self.assertRaises(receipts.Stale):
                stale_r.conn = conn
                stale_r.write("E1", 4, b"own")
            conn.rollback()
            self.assertEqual(state_of(b, conn, "E1"), ([want], [want]))
        self.for_each(test)

    def test_prune_and_expiry_against_hand_computed_sets(self):
        """Receipts written at known times: an expired one does not settle
        and may be replaced; prune deletes exactly the expired ones, in
        batches, of every consumer."""
        def test(b):
            now = [BASE]
            conn = b.connect()
            r = receipts.Receipts(conn, b.dialect, "c", datetime.timedelta(hours=1),
                                  now=lambda: now[0])
            other = receipts.Receipts(conn, b.dialect, "other", 60, now=lambda: now[0])
            for i in range(5):  # e0..e4 at BASE: expire at BASE+1h
                r.run(f"e{i}", 1, effect_of(b, f"e{i}", 1, "x"))
            other.run("o0", 1, lambda conn: "o")  # expires at BASE+1m
            now[0] = BASE + datetime.timedelta(minutes=90)
            for i in range(3):  # l0..l2: expire at BASE+150m
                r.run(f"l{i}", 1, effect_of(b, f"l{i}", 1, "y"))
            self.assertIsNone(r.lookup("e0"))
            self.assertEqual(r.lookup("l0"), (1, b"y"))
            # A receipt expires at exactly recorded_at + ttl.
            now[0] = BASE + datetime.timedelta(minutes=150) - datetime.timedelta(microseconds=1)
            self.assertEqual(r.lookup("l0"), (1, b"y"))
            now[0] = BASE + datetime.timedelta(minutes=90)
            # A new holder replaces the expired e4 (its record is gone too).
            self.assertEqual(r.run("e4", 7, effect_of(b, "e4", 7, "z")), b"z")
            self.assertEqual(r.lookup("e4"), (7, b"z"))
            self.assertEqual(r.prune(2), 5)  # e0..e3 and other's o0
            cur = conn.cursor()
            cur.execute("SELECT consumer, key FROM dedupd_receipts")
            self.assertEqual(sorted(tuple(row) for row in cur.fetchall()),
                             [("c", "e4"), ("c", "l0"), ("c", "l1"), ("c", "l2")])
            conn.rollback()
            self.assertEqual(r.prune(2), 0)
        self.for_each(test)

    def test_bad_input_refused_with_a_clear_error(self):
        def test(b):
            conn = b.connect()
            r = receipts.Receipts(conn, b.dialect, "c", 60)
            for name, call in {
                "zero token": lambda: r.write("k", 0, b""),
                "bool token": lambda: r.write("k", True, b""),
                "no ttl": lambda: receipts.Receipts(conn, b.dialect, "c", 0),
                "bad table": lambda: receipts.Receipts(conn, b.dialect, "c", 60, table="a b"),
                "string dialect": lambda: receipts.Receipts(conn, "sqlite", "c", 60),
                "zero batch": lambda: r.prune(0),
            }.items():
                with self.subTest(name), self.assertRaises((ValueError, TypeError)):
                    call()
            effect_of(b, "k", 1, "x")(conn)  # the caller's own transaction is open
            with self.assertRaisesRegex(ValueError, "already has a transaction open"):
                r.run("k", 1, effect_of(b, "k", 1, "x"))
            conn.commit()  # the caller's transaction was left alone: its effect commits
            self.assertEqual(state_of(b, conn, "k"), ([(1, "x")], []))
            if b.dialect is receipts.Dialect.POSTGRES:
                auto = b.connect()
                auto.autocommit = True
                with self.assertRaisesRegex(ValueError, "autocommit"):
                    receipts.Receipts(auto, b.dialect, "c", 60).run("k2", 1, lambda conn: b"")
        self.for_each(test)


class SQLTest(unittest.TestCase):
    def test_sql_is_the_go_helpers(self):
        """client/receipts/testdata is the Go helper's SQL (its
        TestSQLMatchesGolden checks that side)."""
        def golden(name):
            with open(os.path.join(REPO_TESTDATA, name), encoding="utf-8") as f:
                return f.read()

        def joined(stmts):
            return "".join(s + ";\n\n" for s in stmts)
        for dialect, name in [(receipts.Dialect.POSTGRES, "migration-postgres.sql"),
                              (receipts.Dialect.COCKROACH, "migration-postgres.sql"),
                              (receipts.Dialect.SQLITE, "migration-sqlite.sql")]:
            self.assertEqual(joined(receipts.migration(dialect, receipts.DEFAULT_TABLE)),
                             golden(name), dialect)
        from dedupd.receipts._sql import statements
        s = statements(receipts.Dialect.SQLITE, receipts.DEFAULT_TABLE)
        self.assertEqual(joined([s.write, s.settle, s.prune]), golden("queries.sql"))
        p = statements(receipts.Dialect.POSTGRES, receipts.DEFAULT_TABLE)
        self.assertEqual(p.settle.count("%s"), 3)
        self.assertEqual(p.write.replace("%s", "?"), s.write)
