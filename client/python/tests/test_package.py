"""The package as installed: typed, its generated modules inside it, and
the proto names on the wire unchanged by the move into dedupd._proto."""

import importlib.util
import os
import unittest

import dedupd


class PackageTest(unittest.TestCase):
    def test_generated_modules_live_inside_the_package(self):
        self.assertEqual(dedupd.dedup_pb2.__name__, "dedupd._proto.dedup.v1.dedup_pb2")
        self.assertEqual(dedupd.admin_pb2.__name__, "dedupd._proto.dedup.v1.admin_pb2")
        # No bare top-level "dedup" package comes with the client.
        self.assertIsNone(importlib.util.find_spec("dedup"))

    def test_proto_names_are_unchanged(self):
        # Type URLs (type.googleapis.com/dedup.v1.Record) and reflection use
        # these, so the move must not touch them.
        record = dedupd.dedup_pb2.Record.DESCRIPTOR
        self.assertEqual(record.full_name, "dedup.v1.Record")
        self.assertEqual(record.file.name, "dedup/v1/dedup.proto")
        service = dedupd.admin_pb2.DESCRIPTOR.services_by_name["AdminService"]
        self.assertEqual(service.full_name, "dedup.v1.AdminService")
        self.assertEqual(dedupd.error_reason_pb2.ErrorReason.Name(5), "DIGEST_MISMATCH")

    def test_typed(self):
        root = os.path.dirname(dedupd.__file__)
        self.assertTrue(os.path.isfile(os.path.join(root, "py.typed")))
        self.assertTrue(os.path.isfile(os.path.join(root, "_proto", "dedup", "v1", "dedup_pb2.pyi")))
