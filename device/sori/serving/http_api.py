"""The daemon's local HTTP API on aiohttp, loopback by default (see `sori.serving.api_access`).

GET  /health    {"status": "ok", ...}; never needs the token
GET  /metrics   Prometheus text: stage latency histograms, turns per tier, errors, ...
POST /say       {"text": "거실 불 켜줘"} → the turn as JSON (intent, actions, reply, timings);
                Content-Type application/json and the token, always
POST /mute      nothing reaches the recognizer until /unmute (kept across restarts);
POST /unmute    the state as JSON {"muted", "wake", "listening_s", "wakes"}; the token
POST /listen    push-to-talk: a command without the wake phrase for [wake] listen_s
GET  /events    server-sent events: one `data:` line per event, each turn and stage;
                without the token only types, ids, intents, tiers, ok flags and timings

Every request is checked in one middleware, in this order: Host (421), Origin (403),
route (404/405), an Authorization header that is not ASCII (400), token (401),
Content-Type (415). Malformed HTTP gets aiohttp's 400 and one short log line, never a
traceback. Replies and events pass through `sori.core.redact`.

A connection must send a complete request within IDLE_TIMEOUT_S. Past
http.max_connections, the oldest connection that is between requests and has never
carried the token is closed to make room, so clients sending requests a byte at a time
cannot lock out the token holder; only when every connection is busy or trusted does a
new one get 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import HttpVersion11, web

from sori.core.config.sections import HttpConfig
from sori.core.errors import ConfigError
from sori.core.redact import redact, redact_data
from sori.serving.api_access import Access, build_access, split_bind
from sori.serving.daemon import Daemon
from sori.serving.http_connections import CappedSite, ConnectionCap, ProtocolLog

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
BODY_TIMEOUT_S = 10.0
"""A body not fully sent within this many seconds gets 408."""
IDLE_TIMEOUT_S = 15.0
"""A connection that sends no complete request for this long is closed."""
KEEPALIVE_EVERY_S = 15.0
AUTHENTICATED: Any = (
    web.RequestKey("authenticated", bool) if hasattr(web, "RequestKey") else "authenticated"
)
"""Where the guard leaves whether the request carried the token."""
ROUTES = {
    "/health": "GET",
    "/metrics": "GET",
    "/say": "POST",
    "/events": "GET",
    "/mute": "POST",
    "/unmute": "POST",
    "/listen": "POST",
}

PUBLIC_FIELDS = frozenset({"type", "utterance_id", "index", "intent", "tier", "ok"})
"""Event fields /events shows without the token, besides the timings (every field named
`..._ns`): what a client needs to follow turns (types, ids, intents, tiers, ok flags),
never what was said, nor which device or handler acted (README "Security")."""
NESTED_EVENTS = ("previous", "replacement")
"""Fields holding an event (IntentCorrected's), shown as public events themselves."""


class HttpApi:
    """Serves the API for one daemon."""

    def __init__(
        self,
        daemon: Daemon,
        bind: str = "127.0.0.1:8377",
        config: HttpConfig | None = None,
        token: str | None = None,
    ) -> None:
        self.daemon = daemon
        self.config = config or HttpConfig()
        self.host, self.port = split_bind(bind)
        self.token = token
        self.access: Access | None = None
        self._runner: web.AppRunner | None = None
        self._streams: set[asyncio.Task] = set()
        self.cap = ConnectionCap(self.config.max_connections)
        self._endpoints: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {}
        build_access(self.config, self.host, self.port, token)  # refuse a bad bind early

    async def start(self) -> None:
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY_BYTES)
        # One route takes every request, so each passes the guard (which answers 404 and
        # 405 from ROUTES) and _expect (aiohttp's own fails on raw bytes in Expect).
        app.router.add_route("*", "/{path:.*}", self._dispatch, expect_handler=self._expect)
        self._endpoints = {
            "/health": self._health, "/metrics": self._metrics, "/say": self._say,
            "/events": self._events, "/mute": self._mute, "/unmute": self._unmute,
            "/listen": self._listen,
        }  # fmt: skip
        self._runner = web.AppRunner(
            app,
            access_log=None,
            keepalive_timeout=IDLE_TIMEOUT_S,
            logger=ProtocolLog(),
            max_line_size=8190,
            max_field_size=8190,
        )
        await self._runner.setup()
        site = CappedSite(self._runner, self.host, self.port, self.cap)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise ConfigError(f"http.bind {self.host}:{self.port}: cannot listen: {exc}") from None
        self.port = site.port
        self.access = build_access(self.config, self.host, self.port, self.token)
        log.info(
            "HTTP API on http://%s:%d (%s)", self.host, self.port,
            "token required" if self.token else "no token: POST /say is refused",
        )  # fmt: skip

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def close(self) -> None:
        for task in list(self._streams):
            task.cancel()
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._runner.cleanup(), 3)
            self._runner = None

    # -- the checks --------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        access = self.access
        assert access is not None
        host = request.headers.get("Host")
        if not access.host_ok(host):
            return _error(
                421, f"this API does not answer to Host {host!r}; add the name you use to "
                "http.allowed_hosts",
            )  # fmt: skip
        if not access.origin_ok(request.headers.get("Origin")):
            return _error(403, "requests from web pages are refused; see http.allowed_origins")
        path = request.path
        if path not in ROUTES:
            return _error(
                404,
                "no such endpoint; try /health, /metrics, /say, /events, /mute, /unmute, /listen",
            )
        if request.method != ROUTES[path]:
            return _error(405, f"{path} takes {ROUTES[path]}", {"Allow": ROUTES[path]})
        changes_state = request.method != "GET"
        given = request.headers.get("Authorization")
        if given is not None and not given.isascii():  # raw bytes, surrogate-escaped
            log.info("HTTP API: refused %s %s: its Authorization header is not ASCII",
                     request.method, path)  # fmt: skip
            return _error(
                400, "the Authorization header holds bytes that are not ASCII; send "
                "'Authorization: Bearer TOKEN' with the API token (sori setup)",
            )  # fmt: skip
        authenticated = access.token_ok(given)
        if path != "/health" and (
            (given is not None and not authenticated)
            or (access.needs_token(path, changes_state) and not authenticated)
        ):
            return _error(
                401, "send 'Authorization: Bearer TOKEN' with the API token (sori setup)",
                {"WWW-Authenticate": 'Bearer realm="sori"'},
            )  # fmt: skip
        if changes_state and (
            request.content_type != "application/json"
            or (request.charset or "utf-8").lower() not in ("utf-8", "utf8")
        ):
            return _error(415, "send the body as Content-Type: application/json")
        request[AUTHENTICATED] = authenticated
        connection = request.protocol
        if authenticated:
            self.cap.trust(connection, self._runner.server if self._runner else None)
        self.cap.serving.add(connection)
        try:
            return await handler(request)
        except _Refused as exc:
            return _error(exc.status, exc.message)
        except web.HTTPException as exc:  # aiohttp's own, e.g. 413 for a body too large
            return _error(exc.status, exc.reason)
        except (asyncio.CancelledError, ConnectionError):
            raise
        except Exception as exc:  # one bad turn must not stop the API
            log.error("HTTP API: %s %s failed: %s", request.method, path, redact(repr(exc)))
            return _error(500, "internal error; the daemon's log has the cause")
        finally:
            self.cap.serving.discard(connection)

    async def _expect(self, request: web.Request) -> web.StreamResponse | None:
        """`Expect: 100-continue` gets the interim answer HTTP/1.1 asks for; any other
        Expect a 417 that does not echo it."""
        if request.headers.get("Expect", "").lower() != "100-continue":
            return _error(417, "only 'Expect: 100-continue' is understood")
        if request.version == HttpVersion11:
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0  # the interim answer is not the reply's
        return None

    # -- the endpoints -----------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        return await self._endpoints[request.path](request)  # the guard checked the path

    async def _health(self, request: web.Request) -> web.Response:
        return _json(200, self.daemon.health())

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self.daemon.metrics.render().encode(),
            content_type="text/plain",
            charset="utf-8",
            headers={"Cache-Control": "no-store"},
        )

    async def _say(self, request: web.Request) -> web.Response:
        try:
            body = await asyncio.wait_for(request.read(), BODY_TIMEOUT_S)
        except TimeoutError:
            raise _Refused(408, f"the body did not arrive within {BODY_TIMEOUT_S:g} s") from None
        turn = await self.daemon.say(_text_of(body))
        return _json(200, redact_data(turn))

    async def _mute(self, request: web.Request) -> web.Response:
        return _json(200, self.daemon.mute(True))

    async def _unmute(self, request: web.Request) -> web.Response:
        return _json(200, self.daemon.mute(False))

    async def _listen(self, request: web.Request) -> web.Response:
        return _json(200, self.daemon.listen_now())

    async def _events(self, request: web.Request) -> web.StreamResponse:
        if len(self._streams) >= self.config.max_event_clients:
            return _error(
                503, f"{self.config.max_event_clients} /events clients already "
                "(http.max_event_clients); try again later", {"Retry-After": "10"},
            )  # fmt: skip
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        full = request[AUTHENTICATED]
        queue = self.daemon.subscribe()
        try:
            response = web.StreamResponse(
                headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
            )
            await response.prepare(request)
            await response.write(b": connected\n\n")
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE_EVERY_S)
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")
                    continue
                shown = redact_data(event if full else public_event(event))
                data = _dumps(shown)
                await response.write(f"event: {event['type']}\ndata: {data}\n\n".encode())
        except (ConnectionError, asyncio.CancelledError):
            return response  # the client left, or the API is closing
        finally:
            self.daemon.unsubscribe(queue)
            self._streams.discard(task)


def public_event(event: dict[str, Any]) -> dict[str, Any]:
    """An event as /events shows it without the token: PUBLIC_FIELDS, and for an error
    only whether there was one."""
    shown: dict[str, Any] = {}
    for key, value in event.items():
        if key == "error":
            shown["ok"] = not value
        elif key in NESTED_EVENTS:
            shown[key] = public_event(value) if isinstance(value, dict) else value
        elif key in PUBLIC_FIELDS or key.endswith("_ns"):
            shown[key] = value
    return shown


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _text_of(body: bytes) -> str:
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise _Refused(400, 'body must be JSON: {"text": "..."}') from None
    except ValueError:  # the only other: a number longer than Python reads
        raise _Refused(
            400, f"body holds a number of more than {sys.get_int_max_str_digits()} digits; "
            'send {"text": "..."}',
        ) from None  # fmt: skip
    text = data.get("text") if isinstance(data, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise _Refused(400, 'body must be JSON with a non-empty "text"')
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused(400, '"text" holds a lone surrogate; send valid Unicode') from None
    return text


def _dumps(data: Any) -> str:
    """JSON that always encodes as UTF-8 (a lone surrogate becomes an escape)."""
    return json.dumps(data, ensure_ascii=False, default=str).encode(
        "utf-8", "backslashreplace"
    ).decode("utf-8")  # fmt: skip


def _json(status: int, data: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, text=_dumps(data), content_type="application/json", headers=headers
    )


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return _json(status, {"error": redact(message)}, headers)
