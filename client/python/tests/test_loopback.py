"""The loopback rule for plaintext tokens: every address of a target must be
on this machine. The expectations are written out by hand from the address
ranges (127.0.0.0/8, ::1, IPv4-mapped 127/8) and gRPC's target syntax; they
include every case of the Go rule's table (internal/loopback)."""

import unittest

import dedupd
from dedupd._loopback import is_loopback_target

from .clients import SYNC, aio_twin
from .server import server, unique_key

LOOPBACK = [
    "127.0.0.1:7070", "127.8.9.10:1", "127.0.0.1", "localhost:7070", "localhost",
    "[::1]:7070", "::1", "[::ffff:127.0.0.1]:7070",
    "dns:127.0.0.1:7070", "dns:///localhost:7070", "dns:///[::1]:7070",
    "dns://127.0.0.1/127.0.0.1:7070", "dns://8.8.8.8/127.0.0.1:7070",
    "passthrough:///localhost:7070", "passthrough:127.0.0.1:7070",
    "ipv4:127.0.0.1:7070", "ipv4:127.0.0.1", "ipv4:127.0.0.1:1,127.0.0.2:7070",
    "ipv6:[::1]:1,[::ffff:127.0.0.1]:17071", "ipv6:::1", "ipv6:[::1]",
    "unix:/run/dedupd.sock", "unix:///run/dedupd.sock", "unix-abstract:dedupd",
]

NOT_LOOPBACK = [
    "10.0.0.1:7070", "dedupd:7070", "dedupd.example:7070", "localhost.example:7070",
    "0.0.0.0:7070", "LOCALHOST:7070", "localhost.:7070",
    "[::]:7070", "[2001:db8::1]:7070", "[::ffff:10.0.0.1]:7070", "128.0.0.1:7070",
    "dns:///dedupd.example:7070", "dns:10.0.0.1:7070", "dns://127.0.0.1/10.0.0.1:7070",
    "dns://127.0.0.1", "passthrough:///dedupd.example:7070",
    # another resolver may map any name, localhost included, anywhere
    "dns://8.8.8.8/localhost:7070",
    # one address of a list is enough to refuse
    "ipv4:127.0.0.1:7070,10.0.0.1:7070", "ipv4:10.0.0.1:7070,127.0.0.1:7070",
    "ipv6:[::1]:1,[2001:db8::1]:7070", "ipv4:localhost:7070", "ipv4:",
    "127.0.0.1:1,10.0.0.1:2",
    "xds:///dedupd", "vsock:2:7070", "", ":7070", "[::1", "[::1]x",
]


class LoopbackRuleTest(unittest.TestCase):
    api = SYNC

    def test_table(self):
        for target in LOOPBACK:
            with self.subTest(target=target):
                self.assertTrue(is_loopback_target(target))
        for target in NOT_LOOPBACK:
            with self.subTest(target=target):
                self.assertFalse(is_loopback_target(target))

    def test_client_refuses_plaintext_token_to_any_list_with_a_remote_address(self):
        for target in ("ipv4:127.0.0.1:7070,10.0.0.1:7070", "ipv6:[::1]:1,[2001:db8::1]:7070"):
            with self.subTest(target=target):
                with self.assertRaisesRegex(ValueError, "plaintext"):
                    self.api.Client(target, token="tok-secret")

    def test_token_reaches_the_server_through_a_loopback_list(self):
        # Port 1 refuses the connection; gRPC moves on to the real server.
        # The run's server has no --auth-tokens, so the token is ignored, but
        # the call proves the list is accepted and usable.
        host, port = server().addr.rsplit(":", 1)
        target = f"ipv4:{host}:1,{host}:{port}"
        with self.api.Client(target, token="tok-secret", timeout=10) as c:
            resp = c.claim("py-loopback", unique_key())
        self.assertEqual(resp.outcome, dedupd.OUTCOME_ACQUIRED)


LoopbackRuleTestAio = aio_twin(LoopbackRuleTest)
