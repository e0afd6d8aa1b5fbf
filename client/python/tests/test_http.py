"""dedupd's HTTP API from the standard library's urllib, with no generated
code and no client package: Claim, Complete and the replay as JSON over
`dedupd serve --http-listen` (docs/http.md), and an error's ErrorInfo
reason read from the Connect error body."""

import base64
import json
import unittest
import urllib.error
import urllib.request

from .server import Server, unique_key

CONSUMER = "py-http"


class HTTPThroughUrllibTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(["--http-listen", "127.0.0.1:0"])
        cls.base = f"http://{cls.server.http_addr}"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def call(self, method, body):
        """POSTs body as JSON; returns the HTTP status and the parsed answer,
        an error's included."""
        req = urllib.request.Request(
            f"{self.base}/dedup.v1.DedupService/{method}", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as err:
            with err:
                return err.code, json.load(err)

    @staticmethod
    def reason(answer):
        return next(d["debug"]["reason"] for d in answer["details"] if d["type"] == "google.rpc.ErrorInfo")

    def test_claim_complete_replay(self):
        key = unique_key("urllib")
        digest = base64.b64encode(b"order 42: 3 items").decode()
        result = bytes([0x00, 0xFF, 0x22, 0x5C])  # no JSON string holds these raw

        status, first = self.call("Claim", {"consumer": CONSUMER, "key": key, "digest": digest, "lease_ttl": "30s"})
        self.assertEqual((status, first["outcome"], first["fencingToken"]), (200, "OUTCOME_ACQUIRED", "1"))

        status, done = self.call("Complete", {"consumer": CONSUMER, "key": key, "fencingToken": first["fencingToken"],
                                              "result": base64.b64encode(result).decode()})
        self.assertEqual((status, done["record"]["state"]), (200, "STATE_COMPLETED"))

        status, replay = self.call("Claim", {"consumer": CONSUMER, "key": key, "digest": digest})
        self.assertEqual((status, replay["outcome"]), (200, "OUTCOME_COMPLETED"))
        self.assertEqual(base64.b64decode(replay["record"]["result"]), result)

    def test_other_digest_is_refused(self):
        key = unique_key("urllib-conflict")
        self.call("Claim", {"consumer": CONSUMER, "key": key, "digest": "q83vEjQ="})
        status, err = self.call("Claim", {"consumer": CONSUMER, "key": key, "digest": "3q2+7w=="})
        self.assertEqual((status, err["code"], self.reason(err)), (400, "failed_precondition", "DIGEST_MISMATCH"))

    def test_stale_token_is_refused_and_stores_nothing(self):
        key = unique_key("urllib-stale")
        self.call("Claim", {"consumer": CONSUMER, "key": key})
        status, err = self.call("Complete", {"consumer": CONSUMER, "key": key, "fencingToken": "2", "result": "eA=="})
        self.assertEqual((status, self.reason(err)), (409, "LEASE_LOST"))
        status, looked = self.call("Lookup", {"consumer": CONSUMER, "key": key})
        self.assertEqual((status, looked["record"]["state"]), (200, "STATE_PENDING"))


if __name__ == "__main__":
    unittest.main()
