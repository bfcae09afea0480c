"""A real Wyoming server for tests: the example config's models (vosk, espeak-ng, the
example home's presets) loaded once per module, served on a loopback port from a thread;
clients that talk to it with the wyoming package's own AsyncTcpClient; and the records
it logs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.ping import Ping

from sori.assemble.understanding import home_from_config
from sori.core.config import EXAMPLE_CONFIG, load_config
from sori.serving.wyoming_server import WyomingServer, load_services
from sori.serving.wyoming_server.wire import Limits


class LoudnessWake:
    """A stand-in wake detector of `sori.hearing.wake`'s shape, for the wire protocol (the real one
    is tested in test_wyoming_satellite): in each utterance the voice detector hears, it
    "hears" its phrase in the first frame louder than -20 dBFS."""

    name = "loudness"
    phrases = ["소리야"]
    rearm_s = None

    def open_stream(self, within=False):
        detector = self

        class Stream:
            done = False

            def feed(self, pcm: bytes):
                import numpy as np

                from sori.hearing.wake.base import Detection

                x = np.frombuffer(pcm, "<i2").astype(float)
                if not self.done and np.sqrt(np.mean(x**2)) > 3276:
                    self.done = True
                    return [Detection(detector.phrases[0], 0.0, 0.02, 1.0)]
                return []

            def finish(self):
                self.done = True
                return []

            def close(self):
                self.done = True

        return Stream()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(services, limits: Limits | None = None) -> Iterator[WyomingServer]:
    """A WyomingServer on 127.0.0.1 (a free port), run from its own thread and loop."""
    loop = asyncio.new_event_loop()
    server = WyomingServer(services, "tcp://127.0.0.1:0", limits=limits or Limits())
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


@pytest.fixture(scope="module", name="config_file")
def config_file_fixture(tmp_path_factory) -> Path:
    """The example config with no start-up warm-up (it only makes the first command fast)."""
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
    assert "warm_up_s = 6.0" in text
    path = tmp_path_factory.mktemp("wyoming") / "sori.toml"
    path.write_text(text.replace("warm_up_s = 6.0", "warm_up_s = 0.0"), encoding="utf-8")
    return path


@pytest.fixture(scope="module", name="config")
def config_fixture(config_file):
    return load_config(str(config_file))


@pytest.fixture(scope="module", name="services")
def services_fixture(config):
    """Every model the server answers with, loaded once for the module."""
    return load_services(config, home_from_config(config.home), detector=LoudnessWake())


@pytest.fixture(scope="module", name="server")
def server_fixture(services):
    with serving(services) as srv:
        yield srv


def talk(server: WyomingServer, events: list, until: tuple[str, ...], raw: bytes = b"") -> list:
    """Send `events` (and `raw` bytes first), read until an event of a type in `until`."""

    async def main() -> list:
        client = AsyncTcpClient("127.0.0.1", server.port)
        await client.connect()
        try:
            if raw:
                client._writer.write(raw)
            for event in events:
                await client.write_event(event if hasattr(event, "payload") else event.event())
            got = []
            while True:
                event = await asyncio.wait_for(client.read_event(), 30)
                assert event is not None, f"server closed the connection after {got}"
                got.append(event)
                if event.type in until:
                    return got
        finally:
            await client.disconnect()

    return asyncio.run(main())


def audio_events(pcm: bytes, rate: int, width: int, channels: int, chunk: int = 4096) -> list:
    return [
        AudioStart(rate=rate, width=width, channels=channels),
        *(
            AudioChunk(rate=rate, width=width, channels=channels, audio=pcm[i : i + chunk])
            for i in range(0, len(pcm), chunk)
        ),  # fmt: skip
        AudioStop(),
    ]


class Records(logging.Handler):
    """Every record the server logs while in use (it runs on another thread, and
    hypothesis runs many examples in one test, so caplog does not fit)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def crashes(self) -> list[str]:
        """Tracebacks and asyncio's "Unhandled exception in client_connected_cb"."""
        return [
            r.getMessage() for r in self.records
            if r.exc_info or r.levelno >= logging.ERROR or r.name.startswith("asyncio")
        ]  # fmt: skip

    def lines(self) -> list[str]:
        """What the server logged, less its start."""
        return [
            r.getMessage() for r in self.records
            if r.name.startswith("sori.serving.wyoming_server")
            and "serving on" not in r.getMessage()
        ]  # fmt: skip


@pytest.fixture(name="records")
def records_fixture():
    handler = Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def _converse(port: int, raw: bytes = b"", events=(), timeout_s: float = 5.0) -> list:
    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    try:
        with contextlib.suppress(ConnectionError):  # the server may have closed already
            client._writer.write(raw)
            for event in events:
                await client.write_event(event if isinstance(event, Event) else event.event())
        got = []
        while True:
            try:
                event = await asyncio.wait_for(client.read_event(), timeout_s)
            except ConnectionError:  # closed while a write of ours was under way
                event = None
            if event is None:
                return [*got, "closed"]
            got.append(event if event.type == "error" else event.type)
            if event.type == "pong":
                return got
    finally:
        with contextlib.suppress(ConnectionError):
            await client.disconnect()


def converse(port: int, raw: bytes = b"", events=(), timeout_s: float = 5.0) -> list:
    """Send `raw` bytes, then `events` (Event or Eventable); what comes back until a pong:
    error events whole, other events by type, and "closed" when the server closes."""
    return asyncio.run(_converse(port, raw, events, timeout_s))


def error_texts(got: list) -> str:
    """The texts of the error events in what `converse` got."""
    return " | ".join(Error.from_event(e).text for e in got if isinstance(e, Event))


def kinds(got: list) -> list[str]:
    """The event types in what `converse` got ("closed" for the end)."""
    return [e.type if isinstance(e, Event) else e for e in got]


def alive(port: int) -> None:
    """The server at `port` still answers a ping."""
    assert converse(port, events=[Ping(text="still there")]) == ["pong"]
