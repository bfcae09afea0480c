"""A tiny real HTTP server that records requests and answers with a set status."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Recorder:
    def __init__(self, status: int = 200, body: dict | None = None, delay_s: float = 0.0):
        self.requests: list[tuple[str, dict, dict]] = []
        self.status = status
        self.body = body or {}
        self.delay_s = delay_s
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                size = int(self.headers.get("Content-Length", 0))
                data = json.loads(self.rfile.read(size) or b"{}")
                recorder.requests.append((self.path, dict(self.headers), data))
                if recorder.delay_s:
                    threading.Event().wait(recorder.delay_s)
                out = json.dumps(recorder.body).encode()
                self.send_response(recorder.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
