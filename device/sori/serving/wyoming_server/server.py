"""The listening Wyoming server: `sori wyoming`, and the server `sori run` starts beside
the assistant with [wyoming] enabled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from typing import Any
from urllib.parse import urlparse

from sori.assemble.state import build_answerer
from sori.core.config import Config
from sori.core.errors import ConfigError, DependencyError
from sori.core.home import Home
from sori.serving.wyoming_server.announce import (
    Announcer,
    announce_name,
    announced_address,
    service_info,
)
from sori.serving.wyoming_server.handler import SoriHandler
from sori.serving.wyoming_server.services import Services, load_services, require_wyoming
from sori.serving.wyoming_server.wire import DEFAULT_LIMITS, MAX_HEADER_BYTES, Limits, MiB
from sori.speaking.base import Voice

log = logging.getLogger(__name__)


def check_uri(uri: str) -> str:
    """A Wyoming server address: tcp://HOST:PORT or unix://PATH."""
    parsed = urlparse(uri)
    if parsed.scheme == "tcp":
        try:
            port = parsed.port
        except ValueError:
            port = None
        if parsed.hostname and port is not None:
            return uri
    elif parsed.scheme == "unix" and parsed.path:
        return uri
    raise ConfigError(
        f"wyoming uri {uri!r}: use tcp://HOST:PORT (tcp://0.0.0.0:10700 for the whole "
        "network) or unix:///path/to/socket"
    )


def config_limits(config: Config) -> Limits:
    """The limits [wyoming] sets on each client."""
    w = config.wyoming
    return Limits(
        max_connections=w.max_connections,
        idle_timeout_s=w.idle_timeout_s,
        max_audio_bytes=int(w.max_audio_mb * MiB),
    )


class WyomingServer:
    """Sori's services on a Wyoming address, announced with zeroconf when asked and
    reachable from beyond this machine."""

    def __init__(
        self, services: Services, uri: str, announce_as: str = "", limits: Limits = DEFAULT_LIMITS
    ) -> None:
        self.services = services
        self.uri = check_uri(uri)
        self.announce_as = announce_as
        """The zeroconf instance name; empty: not announced."""
        self.limits = limits
        self._refusing = False
        """Connections are being refused (logged once, until one closes)."""
        self._server: asyncio.AbstractServer | None = None
        self._announcer: Announcer | None = None
        self._connections: dict[asyncio.Task, asyncio.StreamReader] = {}
        """Each open connection's task and the reader it waits on."""

    async def start(self) -> None:
        parsed = urlparse(self.uri)
        if parsed.scheme == "tcp":
            self._server = await asyncio.start_server(
                self._client, parsed.hostname, parsed.port, limit=MAX_HEADER_BYTES
            )
        else:
            self._server = await asyncio.start_unix_server(
                self._client, parsed.path, limit=MAX_HEADER_BYTES
            )
        log.info("wyoming: serving on %s", self.uri)
        if self.announce_as and parsed.scheme == "tcp":
            await self._announce(parsed.hostname)

    async def _announce(self, host: str) -> None:
        """Register with zeroconf; without it the server still serves (Home Assistant can
        be given the address by hand), so a failure is a warning. A server only this
        machine reaches is not announced: the LAN could not use it."""
        try:
            address = announced_address(host)
            if address is None:
                log.info(
                    "wyoming: not announced with zeroconf: %s is reachable from this machine "
                    "only (serve on tcp://0.0.0.0:PORT for the LAN)",
                    self.uri,
                )
                return
            announcer = Announcer(service_info(self.announce_as, address, self.port))
            await announcer.start()
        except (OSError, DependencyError) as exc:
            log.warning(
                "wyoming: not announced with zeroconf (%s); add it in Home Assistant by hand: "
                "Wyoming Protocol, host and port %d",
                exc,
                self.port,
            )
            return
        self._announcer = announcer

    @property
    def port(self) -> int:
        """The TCP port served (the one the system chose for port 0)."""
        if self._server is None or not self._server.sockets:
            return 0
        return self._server.sockets[0].getsockname()[1]

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self.limits.max_connections:
            await self._refuse(writer)
            return
        task = asyncio.current_task()
        self._connections[task] = reader
        try:
            await SoriHandler(reader, writer, self.services, self.limits).run()
        finally:
            self._connections.pop(task, None)
            self._refusing = False

    async def _refuse(self, writer: asyncio.StreamWriter) -> None:
        """A connection past max_connections: told the server is busy, then closed. Logged
        once until a connection closes, so a client retrying in a loop floods no log."""
        from wyoming.error import Error
        from wyoming.event import async_write_event

        count = len(self._connections)
        if not self._refusing:
            log.warning(
                "wyoming: %d connections open, as many as [wyoming] max_connections allows; "
                "refusing more until one closes",
                count,
            )
            self._refusing = True
        text = f"busy: {count} connections open, the most served at once; try again later"
        with contextlib.suppress(ConnectionError, TimeoutError):
            await asyncio.wait_for(async_write_event(Error(text, "busy").event(), writer), 1)
        writer.close()

    async def close(self) -> None:
        if self._announcer is not None:
            await self._announcer.close()
        if self._server is not None:
            self._server.close()
        # Ended as if each client had left (a cancelled connection task makes asyncio's
        # stream callback print a traceback); one still busy after 2 s is cancelled.
        for reader in self._connections.values():
            reader.feed_eof()
        if self._connections:
            _, busy = await asyncio.wait(list(self._connections), timeout=2)
            for task in busy:
                task.cancel()


def serve(config: Config, home: Home, uri: str, zeroconf: bool | None = None) -> int:
    """`sori wyoming`: load the models, serve on `uri` until SIGTERM or SIGINT."""
    import signal

    check_uri(uri)  # a bad address is refused before any model loads
    require_wyoming()
    services = load_services(config, home)
    services.answerer = build_answerer(config, home)
    server = WyomingServer(services, uri, announce_name(config, zeroconf), config_limits(config))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await server.start()
        except OSError as exc:
            raise ConfigError(f"cannot serve Wyoming on {uri}: {exc}; pick a free --uri") from None
        print(f"sori wyoming: serving on {uri}", file=sys.stderr, flush=True)
        try:
            await stop.wait()
        finally:
            await server.close()
            await services.answerer.close()

    asyncio.run(main())
    return 0


def check_wyoming(config: Config) -> None:
    """[wyoming] as `sori run` serves it: refused before any model loads when it cannot
    be (a bad uri, the wyoming package missing)."""
    try:
        check_uri(config.wyoming.uri)
    except ConfigError as exc:
        raise ConfigError(f"[wyoming] uri: {exc}") from None
    require_wyoming()


async def serve_beside(
    config: Config,
    home: Home,
    understanding: Any,
    voice: Voice,
    recognizer: Any = None,
    satellite: Any = None,
    answerer: Any = None,
) -> WyomingServer:
    """The Wyoming server `sori run` starts with [wyoming] enabled: the daemon's own
    understanding (so a reload reaches it), voice and loaded recognizer model (a second
    recognizer on it: the microphone's decoders are busy hearing the room; see
    `sori.assemble.hearing.second_recognizer`) and answerer, and the satellite link when
    [wyoming] satellite is on."""
    from sori.assemble.hearing import second_recognizer

    own = second_recognizer(recognizer) if recognizer is not None else None
    services = await asyncio.to_thread(load_services, config, home, understanding, voice, None, own)
    services.satellite, services.answerer = satellite, answerer
    server = WyomingServer(
        services, config.wyoming.uri, announce_name(config), config_limits(config)
    )
    try:
        await server.start()
    except OSError as exc:
        raise ConfigError(
            f"[wyoming] uri {config.wyoming.uri}: cannot serve there ({exc}); pick a free port"
        ) from None
    return server
