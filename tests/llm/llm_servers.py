"""Real loopback servers for the thinking tests: llama.cpp's OpenAI-compatible server, small
stdlib HTTP servers that misbehave on purpose, and a TCP proxy that delays the first byte."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` serving a GGUF on loopback (stands in for vLLM)."""

    def __init__(self, model: str, log: Path, extra_args: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                model,
                "--model_alias",
                "local",
                "--chat_format",
                "gemma",
                "--n_ctx",
                "1024",
                "--n_threads",
                "1",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *extra_args,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("llama_cpp.server did not come up")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self._log.close()


Behaviour = Callable[[BaseHTTPRequestHandler], None]


class FaultServer:
    """A stdlib HTTP server whose every request is answered by `behaviour`; records requests."""

    def __init__(self, behaviour: Behaviour, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                self._record(b"")
                behaviour(self)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self._record(self.rfile.read(length))
                behaviour(self)

            def _record(self, body: bytes) -> None:
                server.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(body) if body else None,
                    }
                )

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def sse(handler: BaseHTTPRequestHandler, events: list[str]) -> None:
    """Answer with a server-sent event stream of raw `data:` payloads (closes after)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for event in events:
        handler.wfile.write(f"data: {event}\n\n".encode())
        handler.wfile.flush()
    handler.close_connection = True


def chunk(content: str | None = None, finish: str | None = None, **delta: str) -> str:
    if content is not None:
        delta["content"] = content
    return json.dumps(
        {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}, ensure_ascii=False
    )


class DelayProxy:
    """A TCP proxy that holds back the upstream's first byte for `delay_s` seconds."""

    def __init__(self, upstream_port: int, delay_s: float) -> None:
        self.delay_s = delay_s
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream))
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, 0.0), daemon=True).start()
            threading.Thread(
                target=self._pump, args=(upstream, client, self.delay_s), daemon=True
            ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, delay_s: float) -> None:
        first = True
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if first and delay_s and self._closed.wait(delay_s):
                    break
                first = False
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        for sock in self._sockets:
            sock.close()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with the openssl command."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key
