"""A real dedupd for the tests: built from this repository once per run and
started on the embedded store (its default engine) in a temporary directory.

DEDUPD_BIN names a prebuilt binary to use instead of building one.
make_pki() makes a throwaway CA, server and client certificate with the
repository's Go helper (client/dedupdtest/testpki), and auth_file() writes
an --auth-tokens file, for the tests of tokens and TLS. ClientTestCase
gives a test class one dedupd.Client on the run's server.
"""

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
import uuid

import dedupd

from .clients import SYNC

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

_server = None
_lock = threading.Lock()
_build_lock = threading.Lock()


_binary = None


def _dedupd_binary():
    """DEDUPD_BIN, or dedupd built once for the run."""
    global _binary
    with _build_lock:
        if _binary is None:
            _binary = os.environ.get("DEDUPD_BIN")
            if not _binary:
                build_dir = tempfile.mkdtemp(prefix="dedupd-py-bin-")
                atexit.register(shutil.rmtree, build_dir, True)
                _binary = os.path.join(build_dir, "dedupd")
                subprocess.run(["go", "build", "-o", _binary, "./cmd/dedupd"], cwd=REPO, check=True)
        return _binary


class Server:
    """dedupd serve on a free loopback port; extra_args are more flags."""

    def __init__(self, extra_args=()):
        binary = _dedupd_binary()
        self.dir = tempfile.mkdtemp(prefix="dedupd-py-")
        # --ready-file appears (whole) once dedupd serves; its first line
        # is the address it bound, and an "http ADDR" line names the HTTP
        # API's (with --http-listen).
        self.ready = os.path.join(self.dir, "ready")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--log-format", "json",
             "--data-dir", os.path.join(self.dir, "data"), "--ready-file", self.ready, *extra_args],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.logs = []
        drain = self._drainer = threading.Thread(target=self._drain, daemon=True)
        drain.start()
        lines = self._wait_serving(drain)
        self.addr = lines[0]
        self.http_addr = next((line[len("http "):] for line in lines if line.startswith("http ")), None)

    def _wait_serving(self, drain):
        while self.proc.poll() is None:
            try:
                with open(self.ready, encoding="utf-8") as f:
                    return f.read().splitlines()
            except FileNotFoundError:
                time.sleep(0.01)
        drain.join()
        raise RuntimeError("dedupd exited before serving:\n" + "".join(self.logs))

    def _drain(self):
        for line in self.proc.stderr:
            self.logs.append(line)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drainer.join(30)  # the pipe's end: then it can be closed
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def server():
    """The run's one dedupd, started on first use and stopped at exit."""
    global _server
    with _lock:
        if _server is None:
            _server = Server()
            atexit.register(_server.stop)
        return _server


class ClientTestCase(unittest.TestCase):
    """Test cases whose tests share cls.client, a client of cls.api (SYNC,
    dedupd itself, unless an aio_twin) on the run's server, closed after the
    last of them."""

    api = SYNC

    @classmethod
    def setUpClass(cls):
        cls.client = cls.api.Client(server().addr)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()


def make_pki(directory):
    """Writes a CA, a server certificate for 127.0.0.1 and a client
    certificate into directory; returns their paths and the client
    certificate's subject (keys ca, server_cert, server_key, client_cert,
    client_key, client_subject)."""
    out = subprocess.run(["go", "run", "./client/dedupdtest/testpki", directory],
                         cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def auth_file(directory, tokens, cert_subject=None, cert_consumers=()):
    """Writes an --auth-tokens file; tokens are (token, consumers, admin)
    triples. Only the tokens' SHA-256 goes in it."""
    doc = {"tokens": [
        {"sha256": hashlib.sha256(tok.encode()).hexdigest(), "consumers": list(consumers),
         "admin": admin}
        for tok, consumers, admin in tokens]}
    if cert_subject:
        doc["certificates"] = [{"subject": cert_subject, "consumers": list(cert_consumers)}]
    path = os.path.join(directory, "auth.json")  # JSON is YAML
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def unique_key(prefix="k"):
    """A key no other test uses, so tests share one server safely."""
    return f"{prefix}-{uuid.uuid4().hex}"
