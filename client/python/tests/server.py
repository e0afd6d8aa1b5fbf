"""A real dedupd for the tests: built from this repository once per run and
started on the embedded SQLite store in a temporary directory.

DEDUPD_BIN names a prebuilt binary to use instead of building one.
"""

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import threading
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

_server = None
_lock = threading.Lock()


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="dedupd-py-")
        binary = os.environ.get("DEDUPD_BIN")
        if not binary:
            binary = os.path.join(self.dir, "dedupd")
            subprocess.run(["go", "build", "-o", binary, "./cmd/dedupd"], cwd=REPO, check=True)
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--log-format", "json",
             "--data-dir", os.path.join(self.dir, "data")],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.logs = []
        self.addr = self._wait_serving()
        threading.Thread(target=self._drain, daemon=True).start()

    def _wait_serving(self):
        for line in self.proc.stderr:
            self.logs.append(line)
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "dedupd serving":
                return entry["listen"]
        self.proc.wait()
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
        shutil.rmtree(self.dir, ignore_errors=True)


def server():
    """The run's one dedupd, started on first use and stopped at exit."""
    global _server
    with _lock:
        if _server is None:
            _server = Server()
            atexit.register(_server.stop)
        return _server


def unique_key(prefix="k"):
    """A key no other test uses, so tests share one server safely."""
    return f"{prefix}-{uuid.uuid4().hex}"
