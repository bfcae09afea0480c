"""The daemon's local HTTP API on asyncio streams (no web framework), loopback by default.

GET  /health    {"status": "ok", ...}
GET  /metrics   Prometheus text: stage latency histograms, turns per tier, errors, ...
POST /say       {"text": "거실 불 켜줘"} → the turn as JSON (intent, actions, reply, timings)
GET  /events    server-sent events: one `data:` line per event, each turn and stage
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from sori.daemon import Daemon
from sori.errors import ConfigError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           413: "Payload Too Large", 500: "Internal Server Error"}  # fmt: skip


class HttpApi:
    """Serves the API for one daemon."""

    def __init__(self, daemon: Daemon, bind: str = "127.0.0.1:8377") -> None:
        host, _, port = bind.rpartition(":")
        self.daemon = daemon
        self.host = host.strip("[]") or "127.0.0.1"
        self.port = int(port)
        self._server: asyncio.Server | None = None
        self._streams: set[asyncio.Task] = set()

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._serve, self.host, self.port)
        except OSError as exc:
            raise ConfigError(f"http.bind {self.host}:{self.port}: cannot listen: {exc}") from None
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("HTTP API on http://%s:%d", self.host, self.port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._streams):
                task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._streams.add(task)
        try:
            method, path, body = await _read_request(reader)
            await self._route(method, path, body, writer)
        except _HttpError as exc:
            await _respond(writer, exc.status, {"error": exc.message})
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        except Exception as exc:  # one bad request must not stop the API
            log.exception("HTTP API error")
            with contextlib.suppress(Exception):
                await _respond(writer, 500, {"error": str(exc)})
        finally:
            if task is not None:
                self._streams.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _route(self, method: str, path: str, body: bytes, writer) -> None:  # noqa: ANN001
        path = path.split("?", 1)[0]
        routes = {"/health": "GET", "/metrics": "GET", "/say": "POST", "/events": "GET"}
        if path not in routes:
            raise _HttpError(404, f"no {path}; try /health, /metrics, /say, /events")
        if method != routes[path]:
            raise _HttpError(405, f"{path} takes {routes[path]}")
        if path == "/health":
            await _respond(writer, 200, self.daemon.health())
        elif path == "/metrics":
            text = self.daemon.metrics.render().encode()
            await _respond(writer, 200, text, "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/say":
            await _respond(writer, 200, await self.daemon.say(_text_of(body)))
        else:
            await self._events(writer)

    async def _events(self, writer: asyncio.StreamWriter) -> None:
        queue = self.daemon.subscribe()
        try:
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n: connected\n\n"
            )
            await writer.drain()
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), 15)
                except TimeoutError:
                    writer.write(b": keep-alive\n\n")
                else:
                    data = json.dumps(event, ensure_ascii=False, default=str)
                    writer.write(f"event: {event['type']}\ndata: {data}\n\n".encode())
                await writer.drain()
        finally:
            self.daemon.unsubscribe(queue)


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, path, _ = lines[0].split(" ", 2)
    except ValueError:
        raise _HttpError(400, "malformed request line") from None
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    size = int(headers.get("content-length") or 0)
    if size > MAX_BODY_BYTES:
        raise _HttpError(413, f"body over {MAX_BODY_BYTES} bytes")
    body = await asyncio.wait_for(reader.readexactly(size), 10) if size else b""
    return method.upper(), path, body


def _text_of(body: bytes) -> str:
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _HttpError(400, 'body must be JSON: {"text": "..."}') from None
    text = data.get("text") if isinstance(data, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise _HttpError(400, 'body must be JSON with a non-empty "text"')
    return text


async def _respond(
    writer: asyncio.StreamWriter, status: int, body: Any, content_type: str = "application/json"
) -> None:
    if not isinstance(body, bytes):
        body = json.dumps(body, ensure_ascii=False).encode()
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'OK')}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
