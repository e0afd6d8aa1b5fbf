"""A fake payment gateway, as the crash test (and a manual run) needs one.

It is deliberately NOT idempotent: every POST /charges makes a new charge,
even for an event already charged, as a real card charge without an
idempotency key would. It offers the lookup a real gateway offers:
GET /charges?event_id=E lists the charges made for event E. That lookup is
what the consumer's settle function asks.

    python3 fake_gateway.py 127.0.0.1:8081     # serve until interrupted
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import urllib.parse


class FakeGateway:
    """The gateway's book: charge ids per event id, in the order made."""

    def __init__(self) -> None:
        self.charges: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._next = 0
        self._server: http.server.ThreadingHTTPServer | None = None

    def charge(self, event_id: str) -> str:
        with self._lock:
            self._next += 1
            charge_id = f"ch_{self._next}"
            self.charges.setdefault(event_id, []).append(charge_id)
            return charge_id

    def lookup(self, event_id: str) -> list[str]:
        with self._lock:
            return list(self.charges.get(event_id, ()))

    def snapshot(self) -> dict[str, list[str]]:
        with self._lock:
            return {k: list(v) for k, v in self.charges.items()}

    def serve(self, address: str = "127.0.0.1:0") -> str:
        """Serves on a thread; returns the base URL."""
        host, _, port = address.rpartition(":")
        self._server = http.server.ThreadingHTTPServer((host, int(port)), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://{host}:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _handler(gateway: FakeGateway) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            self._reply(201, {"id": gateway.charge(str(body["event_id"]))})

        def do_GET(self) -> None:
            query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            event_id = query.get("event_id", [""])[0]
            self._reply(200, {"charges": gateway.lookup(event_id)})

        def _reply(self, status: int, doc: object) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the test prints its own figures

    return Handler


if __name__ == "__main__":
    gw = FakeGateway()
    print(gw.serve(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8081"), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
