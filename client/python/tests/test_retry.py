"""The client's retry policy: a call answered UNAVAILABLE (nothing was
done) is retried by gRPC, for DedupService and StreamService alike.

A gRPC server in the test stands in front of the run's dedupd: it answers
the first attempt of each call UNAVAILABLE, then forwards to dedupd, and
counts the attempts it saw."""

import concurrent.futures
import threading
import unittest

import grpc

import dedupd
from dedupd._proto.dedup.v1 import dedup_pb2_grpc, stream_pb2_grpc

from .clients import SYNC, aio_twin
from .server import server, unique_key

CONSUMER = "py-retry"


class FailsFirst:
    """Counts attempts per method; the first of each is UNAVAILABLE."""

    def __init__(self):
        self.attempts, self.lock = {}, threading.Lock()

    def admit(self, method, context):
        with self.lock:
            self.attempts[method] = self.attempts.get(method, 0) + 1
            first = self.attempts[method] == 1
        if first:
            context.abort(grpc.StatusCode.UNAVAILABLE, "try again")


class Streams(stream_pb2_grpc.StreamServiceServicer):
    def __init__(self, gate, upstream):
        self.gate, self.upstream = gate, upstream

    def GetStream(self, request, context):
        self.gate.admit("GetStream", context)
        return self.upstream.GetStream(request)

    def ClaimStream(self, request, context):
        self.gate.admit("ClaimStream", context)
        return self.upstream.ClaimStream(request)


class Keys(dedup_pb2_grpc.DedupServiceServicer):
    def __init__(self, gate, upstream):
        self.gate, self.upstream = gate, upstream

    def Claim(self, request, context):
        self.gate.admit("Claim", context)
        return self.upstream.Claim(request)


class RetryPolicyTest(unittest.TestCase):
    api = SYNC

    def setUp(self):
        self.upstream = grpc.insecure_channel(server().addr)
        self.gate = FailsFirst()
        self.front = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        stream_pb2_grpc.add_StreamServiceServicer_to_server(
            Streams(self.gate, stream_pb2_grpc.StreamServiceStub(self.upstream)), self.front)
        dedup_pb2_grpc.add_DedupServiceServicer_to_server(
            Keys(self.gate, dedup_pb2_grpc.DedupServiceStub(self.upstream)), self.front)
        port = self.front.add_insecure_port("127.0.0.1:0")
        self.front.start()
        self.client = self.api.Client(f"127.0.0.1:{port}")

    def tearDown(self):
        self.client.close()
        self.front.stop(None)
        self.upstream.close()

    def test_stream_calls_are_retried_on_unavailable(self):
        s = unique_key("order")
        claim = self.client.claim_stream(CONSUMER, s, 1)
        self.assertEqual(claim.outcome, dedupd.STREAM_OUTCOME_ACQUIRED)
        self.assertEqual(self.client.get_stream(CONSUMER, s).in_flight, 1)
        self.assertEqual(self.gate.attempts, {"ClaimStream": 2, "GetStream": 2})

    def test_key_calls_are_retried_on_unavailable(self):
        claim = self.client.claim(CONSUMER, unique_key())
        self.assertEqual(claim.outcome, dedupd.OUTCOME_ACQUIRED)
        self.assertEqual(self.gate.attempts, {"Claim": 2})


RetryPolicyTestAio = aio_twin(RetryPolicyTest)


if __name__ == "__main__":
    unittest.main()
