"""The package as installed: typed, its generated modules inside it, and
the proto names on the wire unchanged by the move into dedupd._proto."""

import ast
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

    def test_no_import_cycle_between_modules(self):
        # Every import of one dedupd module by another, at any depth of the
        # code (a call-time import inside a function counts too).
        root = os.path.dirname(dedupd.__file__)
        graph = {}
        for name in os.listdir(root):
            if name.endswith(".py") and name != "__init__.py":
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                graph[name[:-3]] = {
                    node.module.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}
        self.assertIn("batch", graph["client"])  # the check sees the imports it guards

        def cycle_from(start, path):
            for dep in sorted(graph.get(path[-1], ())):
                if dep == start:
                    return path + [dep]
                if dep not in path:
                    found = cycle_from(start, path + [dep])
                    if found:
                        return found
            return None

        for module in sorted(graph):
            self.assertIsNone(cycle_from(module, [module]), "import cycle")
