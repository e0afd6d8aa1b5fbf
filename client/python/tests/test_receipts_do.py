"""do() and reconcile() with receipts, against a real dedupd and each
receipts database: a holder whose lease runs out after its effect and
receipt committed is taken over, and the takeover settles from the
receipt without repeating the effect; one that died before its commit is
run again, once; a lost COMMIT leaves the claim PENDING; reconcile settles
from the receipts; ttl_from_policy reads the consumer's retention."""

import time
import uuid

import dedupd
from dedupd import receipts
from dedupd import admin_pb2
from dedupd._proto.dedup.v1 import admin_pb2_grpc
from google.protobuf import duration_pb2

from .receipt_dbs import ReceiptsTestCase, effect_of, state_of
from .server import server
from .test_receipts_tx import FailingConnection

LEASE = 0.3


class Crash(BaseException):
    """What a dying process looks like to do(): it neither completes nor
    releases (a BaseException that is not an Exception leaves the claim
    PENDING)."""


class DoWithReceiptsTest(ReceiptsTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.client = dedupd.Client(server().addr)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        super().tearDownClass()

    def consumer(self, b):
        return f"py-receipts-{b.name}-{uuid.uuid4().hex[:8]}"

    def do(self, r, key, effect, crash_after=False):
        fn = r.effect(effect)

        def work(token, attempt, *, record):
            out = fn(token, attempt, record=record)
            if crash_after:
                raise Crash()
            return out
        return dedupd.do(self.client, r.consumer, key, work, settle=r.settle,
                         lease_ttl=LEASE, max_wait=60)

    def test_takeover_settles_from_the_receipt(self):
        """The first holder commits its effect and receipt, then dies
        before Complete. The second waits out the lease, takes the key over,
        settles from the receipt, and does not run the effect; a third
        delivery is a replay. The model (effects run) and the database
        both say once."""
        def test(b):
            r = receipts.Receipts(b.connect(), b.dialect, self.consumer(b), 3600)
            runs = []

            def effect(conn):
                runs.append(1)
                return effect_of(b, "E1", len(runs), "done")(conn)
            with self.assertRaises(Crash):
                self.do(r, "E1", effect, crash_after=True)
            first = self.client.lookup(r.consumer, "E1")
            self.assertEqual(first.state, dedupd.STATE_PENDING)
            out = self.do(r, "E1", effect)
            self.assertTrue(out.settled)
            self.assertEqual(out.result, b"done")
            self.assertEqual(out.record.attempts, 2)
            again = self.do(r, "E1", effect)
            self.assertTrue(again.replayed)
            self.assertEqual(again.result, b"done")
            self.assertEqual(len(runs), 1)
            self.assertEqual(state_of(b, r.conn, "E1"), ([(1, "done")], [(1, "done")]))
        self.for_each(test)

    def test_a_holder_that_died_before_its_commit_is_run_again_once(self):
        def test(b):
            r = receipts.Receipts(b.connect(), b.dialect, self.consumer(b), 3600)
            runs = []

            def effect(conn):
                runs.append(1)
                out = effect_of(b, "E1", len(runs), "done")(conn)
                if len(runs) == 1:
                    raise Crash()  # inside the transaction: it never commits
                return out
            with self.assertRaises(Crash):
                self.do(r, "E1", effect)
            out = self.do(r, "E1", effect)
            self.assertFalse(out.settled or out.replayed)
            self.assertEqual(len(runs), 2)
            self.assertEqual(state_of(b, r.conn, "E1"), ([(2, "done")], [(2, "done")]))
        self.for_each(test)

    def test_a_lost_commit_leaves_the_claim_pending(self):
        def test(b):
            conn = FailingConnection(b.connect(), commit_lost=True)
            r = receipts.Receipts(conn, b.dialect, self.consumer(b), 3600)
            with self.assertRaises(dedupd.OutcomeUnknown):
                self.do(r, "E1", effect_of(b, "E1", 1, "done"))
            self.assertEqual(self.client.lookup(r.consumer, "E1").state, dedupd.STATE_PENDING)
            conn.commit_lost = False
            out = self.do(r, "E1", effect_of(b, "E1", 2, "again"))
            self.assertTrue(out.settled)
            self.assertEqual(state_of(b, conn, "E1"), ([(1, "done")], [(1, "done")]))
        self.for_each(test)

    def test_reconcile_settles_from_receipts(self):
        """reconcile(settle=) and reconcile(decide) complete the key whose
        receipt committed and release the one whose effect never did."""
        def test(b):
            for how in ("settle", "decide"):
                r = receipts.Receipts(b.connect(), b.dialect, self.consumer(b), 3600)
                with self.assertRaises(Crash):
                    self.do(r, f"done-{how}", effect_of(b, f"done-{how}", 1, "ok"), crash_after=True)

                def lost(conn):
                    raise Crash()
                with self.assertRaises(Crash):
                    self.do(r, f"lost-{how}", lost)
                time.sleep(LEASE + 0.2)  # both leases run out
                settled = (dedupd.reconcile(self.client, r.consumer, settle=r.settle)
                           if how == "settle" else dedupd.reconcile(self.client, r.consumer, r.decide))
                got = {s.key: type(s.decision).__name__ for s in settled}
                self.assertEqual(got, {f"done-{how}": "Complete", f"lost-{how}": "Release"})
                done = self.client.lookup(r.consumer, f"done-{how}")
                self.assertEqual((done.state, done.result), (dedupd.STATE_COMPLETED, b"ok"))
                self.assertEqual(self.client.lookup(r.consumer, f"lost-{how}").state,
                                 dedupd.STATE_RELEASED)
        self.for_each(test)

    def test_ttl_from_policy(self):
        consumer = f"py-receipts-policy-{uuid.uuid4().hex[:8]}"
        admin = admin_pb2_grpc.AdminServiceStub(self.client.channel)
        admin.SetPolicy(admin_pb2.SetPolicyRequest(policy=admin_pb2.Policy(
            consumer=consumer, completed_ttl=duration_pb2.Duration(seconds=36 * 3600))))
        self.assertEqual(receipts.ttl_from_policy(self.client, consumer), 36 * 3600.0)
        with self.assertRaises(dedupd.InvalidRequest):
            receipts.ttl_from_policy(self.client, "")
