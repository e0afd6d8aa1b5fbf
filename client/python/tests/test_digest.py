"""Every vector of client/testdata/digest-vectors.json, which the Go and Node
clients check too, plus the JCS corner cases a Python value can reach."""

import base64
import json
import os
import unittest

from google.protobuf import json_format

import dedupd
from dedupd import dedup_pb2
from dedupd.digest import es6_number

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "digest-vectors.json")


def load_vectors():
    with open(VECTORS, encoding="utf-8") as f:
        return json.load(f)


class DigestVectorsTest(unittest.TestCase):
    def test_every_vector(self):
        vectors = load_vectors()
        kinds = {v["kind"] for v in vectors}
        self.assertEqual(kinds, {"bytes", "json", "proto"})
        for v in vectors:
            with self.subTest(v["name"]):
                want = bytes.fromhex(v["digest_hex"])
                self.assertEqual(len(want), 33)
                if v["kind"] == "bytes":
                    got = dedupd.digest_bytes(base64.b64decode(v["input"]))
                elif v["kind"] == "json":
                    self.assertEqual(
                        dedupd.canonical_json(json.loads(v["input"])).decode("utf-8"),
                        v["canonical"])
                    got = dedupd.digest_json_text(v["input"])
                else:
                    msg = json_format.Parse(v["input"], dedup_pb2.ClaimRequest())
                    if "wire_base64" in v:
                        self.assertEqual(msg.SerializeToString(deterministic=True),
                                         base64.b64decode(v["wire_base64"]))
                    got = dedupd.digest_proto(msg)
                self.assertEqual(got.hex(), want.hex())


class CanonicalJSONTest(unittest.TestCase):
    def test_values_not_reachable_from_text(self):
        cases = [
            ({"b": 1, "a": (1.0, 2)}, b'{"a":[1,2],"b":1}'),
            ([1e21, 1e-7, -0.0, 2**60], b"[1e+21,1e-7,0,1152921504606847000]"),
            ("\u2028\x7f", '"\u2028\x7f"'.encode("utf-8")),
        ]
        for value, want in cases:
            with self.subTest(value=value):
                self.assertEqual(dedupd.canonical_json(value), want)

    def test_refuses_what_json_cannot_say(self):
        for bad in (float("nan"), float("inf"), {1: "x"}, b"bytes", "\ud800", 10**400):
            with self.subTest(bad=bad):
                with self.assertRaises((ValueError, TypeError, UnicodeEncodeError)):
                    dedupd.canonical_json(bad)
        for text in ('{"a":1,"a":2}', "[NaN]", "[1e400]"):
            with self.subTest(text=text):
                with self.assertRaises(ValueError):
                    dedupd.digest_json_text(text)

    def test_es6_number_matches_javascript(self):
        # Outputs of Number.prototype.toString in node v20.
        cases = {0.1 + 0.2: "0.30000000000000004", 1e-6: "0.000001", 123e-20: "1.23e-18",
                 1.5: "1.5", -1e21: "-1e+21", 2**53 + 1: "9007199254740992"}
        for value, want in cases.items():
            with self.subTest(value=value):
                self.assertEqual(es6_number(value), want)


if __name__ == "__main__":
    unittest.main()
