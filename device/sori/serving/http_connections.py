"""The HTTP API's connections: at most http.max_connections, room made by closing the
oldest that is between requests and never carried the token, 503 when none can go; and
aiohttp's per-connection logger, one short line for a malformed request."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from sori.core.redact import redact

log = logging.getLogger("sori.serving.http_api")  # one logger for the whole API


class ConnectionCap:
    """Which connections may be closed to make room for a new one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """http.max_connections."""
        self.trusted: set[web.RequestHandler] = set()
        """Open connections that have carried the token (kept when making room)."""
        self.serving: set[web.RequestHandler] = set()
        """Connections whose request is being handled (a /say turn, an /events stream)."""
        self._full_logged = 0.0

    def trust(self, connection: web.RequestHandler, server: Any) -> None:
        """Remember that `connection` carried the token; closed ones are forgotten."""
        self.trusted.add(connection)
        if server is not None and len(self.trusted) > self.limit:
            self.trusted &= set(server.connections)

    def make_room(self, connections: list[web.RequestHandler]) -> bool:
        """At the limit: close the oldest connections that are between requests (still
        sending one, or idle) and have never carried the token, until one is free. False
        when that is not enough (every connection is busy or trusted): the new one gets
        503. Connections accepted in a burst register late, so this may close more than
        one, back down to the cap."""
        open_now = [c for c in connections if c.transport is not None]  # not closing
        excess = len(open_now) + 1 - self.limit
        if excess <= 0:
            return True
        idle = [c for c in open_now if c not in self.trusted and c not in self.serving]
        for connection in idle[:excess]:  # oldest first
            connection.force_close()
        if len(idle) < excess:
            self._full("refusing more")
            return False
        self._full("closing the oldest idle ones that sent no token")
        return True

    def _full(self, doing: str) -> None:
        """One warning a minute at most while connections are at the limit."""
        now = time.monotonic()
        if now - self._full_logged > 60:
            self._full_logged = now
            log.warning(
                "HTTP API: %d connections open (http.max_connections); %s", self.limit, doing
            )


class ProtocolLog:
    """aiohttp's per-connection logger: a malformed request or a client that leaves is
    one short line (INFO, DEBUG), never an ERROR with a traceback."""

    def debug(self, msg: str, *args: Any, **kw: Any) -> None:
        kw.pop("exc_info", None)
        log.debug("HTTP: " + msg, *args, **kw)

    def exception(self, msg: str, *args: Any, exc_info: Any = True, **kw: Any) -> None:
        exc = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        if isinstance(exc, HttpProcessingError | ConnectionError | TimeoutError):
            reason = redact(str(getattr(exc, "message", "") or exc).strip().split("\n")[0])
            log.info("HTTP API: refused a malformed request: %s", reason[:160])
        else:
            log.error("HTTP API: " + msg, *args, exc_info=exc_info, **kw)

    error = exception

    def warning(self, msg: str, *args: Any, **kw: Any) -> None:
        log.warning("HTTP: " + msg, *args, **kw)

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - the logging.Logger API
        return log.isEnabledFor(level)


class _Busy(asyncio.Protocol):
    """The answer to a connection over http.max_connections: 503, then close."""

    BODY = b'{"error": "too many connections (http.max_connections); try again later"}'

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(self.BODY)}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n"
        )
        transport.write(head.encode() + self.BODY)  # type: ignore[attr-defined]
        transport.close()


class CappedSite(web.BaseSite):
    """A TCP site that keeps at most `cap.limit` connections: past it, `cap.make_room`
    closes one to let the new one in, or says it cannot, and the new one gets 503."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, cap: ConnectionCap) -> None:
        super().__init__(runner)
        self.host, self.port, self.cap = host, port, cap

    @property
    def name(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None

        def connect() -> asyncio.BaseProtocol:
            if len(server.connections) >= self.cap.limit and not self.cap.make_room(
                server.connections
            ):
                return _Busy()
            return server()

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(connect, self.host, self.port, backlog=128)
        self.port = self._server.sockets[0].getsockname()[1]
