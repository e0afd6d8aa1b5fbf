"""Client against a real dedupd with --auth-tokens, TLS and mutual TLS:
tokens from the argument or DEDUPD_TOKEN, the typed refusals, and the TLS
options. The certificates are made afresh for the run (make_pki)."""

import atexit
import os
import shutil
import tempfile
import unittest
from unittest import mock

import dedupd

from .clients import SYNC, aio_twin
from .server import Server, auth_file, make_pki, unique_key

SHOP_TOKEN = "tok-py-shop-3e8c1d57"
ADMIN_TOKEN = "tok-py-admin-a61f90b2"
TOKENS = [(SHOP_TOKEN, ["shop"], False), (ADMIN_TOKEN, [], True)]


def read(path):
    with open(path, "rb") as f:
        return f.read()


class SecureServers:
    """Three dedupds sharing one auth file: plaintext on loopback, TLS, and
    TLS requiring client certificates (the test client certificate is
    listed for consumer shop)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="dedupd-py-pki-")
        self.pki = make_pki(self.dir)
        auth = auth_file(self.dir, TOKENS, self.pki["client_subject"], ["shop"])
        tls = ["--tls-cert", self.pki["server_cert"], "--tls-key", self.pki["server_key"]]
        self.plain = Server(["--auth-tokens", auth])
        self.tls = Server(["--auth-tokens", auth, *tls])
        self.mtls = Server(["--auth-tokens", auth, *tls, "--tls-client-ca", self.pki["ca"]])
        self.ca = read(self.pki["ca"])

    def stop(self):
        for s in (self.plain, self.tls, self.mtls):
            s.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


_servers = None


def secure_servers():
    """The run's SecureServers, started on first use (both clients' tests
    share them) and stopped at exit."""
    global _servers
    if _servers is None:
        _servers = SecureServers()
        atexit.register(_servers.stop)
    return _servers


class SecurityTest(unittest.TestCase):
    api = SYNC

    @classmethod
    def setUpClass(cls):
        cls.servers = secure_servers()

    def client(self, server, **kwargs):
        kwargs.setdefault("timeout", 10)
        c = self.api.Client(server.addr, **kwargs)
        self.addCleanup(c.close)
        return c

    def assert_claims(self, client, consumer="shop"):
        resp = client.claim(consumer, unique_key())
        self.assertEqual(resp.outcome, dedupd.OUTCOME_ACQUIRED)

    def test_token_argument_covers_its_consumer_only(self):
        c = self.client(self.servers.plain, token=SHOP_TOKEN)
        self.assert_claims(c)
        with self.assertRaises(dedupd.PermissionDenied) as cm:
            c.claim("payments", unique_key())
        self.assertEqual(cm.exception.reason, "PERMISSION_DENIED")
        self.assertNotIn(SHOP_TOKEN, str(cm.exception))

    def test_token_from_environment(self):
        with mock.patch.dict(os.environ, {"DEDUPD_TOKEN": SHOP_TOKEN}):
            self.assert_claims(self.client(self.servers.plain))
            # An explicit token wins; token="" sends none.
            with self.assertRaises(dedupd.PermissionDenied):
                self.client(self.servers.plain, token=ADMIN_TOKEN).claim("shop", unique_key())
            with self.assertRaises(dedupd.Unauthenticated):
                self.client(self.servers.plain, token="").claim("shop", unique_key())

    def test_missing_or_unknown_token_is_unauthenticated(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("DEDUPD_TOKEN", None)
            for token in (None, "tok-nobody"):
                with self.subTest(token=token):
                    with self.assertRaises(dedupd.Unauthenticated) as cm:
                        self.client(self.servers.plain, token=token).lookup("shop", "k")
                    self.assertEqual(cm.exception.reason, "UNAUTHENTICATED")

    def test_plaintext_token_only_to_loopback(self):
        with self.assertRaisesRegex(ValueError, "plaintext"):
            self.api.Client("dedupd.example:7070", token=SHOP_TOKEN)
        self.assertNotIn(SHOP_TOKEN, repr(self.api.Client("127.0.0.1:1", token=SHOP_TOKEN)))

    def test_tls_with_root_certificates_and_token(self):
        c = self.client(self.servers.tls, root_certificates=self.servers.ca, token=SHOP_TOKEN)
        runs, key = [], unique_key("tls-do")  # the servers are shared by both clients' tests
        for _ in range(2):
            out = self.api.do(c, "shop", key, lambda token, attempt: runs.append(1) or b"done",
                            digest=dedupd.digest_bytes(b"req"))
            self.assertEqual(out.result, b"done")
        self.assertEqual(len(runs), 1, "do ran fn again over TLS")

    def test_tls_fails_without_the_ca_or_in_plaintext(self):
        for kwargs in ({"tls": True}, {}):
            with self.subTest(**kwargs):
                with self.assertRaises(dedupd.Unavailable):
                    self.client(self.servers.tls, token=SHOP_TOKEN, timeout=5, **kwargs).lookup("shop", "k")

    def test_mutual_tls_certificate_without_token(self):
        pki = self.servers.pki
        c = self.client(self.servers.mtls, token="", root_certificates=self.servers.ca,
                        certificate_chain=read(pki["client_cert"]), private_key=read(pki["client_key"]))
        self.assert_claims(c)
        with self.assertRaises(dedupd.PermissionDenied):
            c.claim("payments", unique_key())
        with self.assertRaises(dedupd.Unavailable):
            self.client(self.servers.mtls, root_certificates=self.servers.ca,
                        token=SHOP_TOKEN, timeout=5).lookup("shop", "k")

    def test_client_certificate_needs_its_key(self):
        with self.assertRaisesRegex(ValueError, "both"):
            self.api.Client("127.0.0.1:1", certificate_chain=b"pem")


SecurityTestAio = aio_twin(SecurityTest)
