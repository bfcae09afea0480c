"""What one Wyoming client may take of the server, and what hostile input gets back, on
a real server (the example config's models) over loopback TCP: the connection cap, the
idle and partial-event timeouts, audio held bounded by bytes, absurd formats refused,
hostile headers answered with an error event and one log line, and zeroconf never for a
loopback server. The fuzz over event frames is in test_wyoming_fuzz."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time

import pytest

pytest.importorskip("wyoming")

from wyoming.asr import Transcribe  # noqa: E402
from wyoming.audio import AudioChunk, AudioStart, AudioStop  # noqa: E402
from wyoming.client import AsyncTcpClient  # noqa: E402
from wyoming.event import Event  # noqa: E402
from wyoming.ping import Ping  # noqa: E402

from sori.core.errors import AudioError  # noqa: E402
from sori.serving.wyoming_server import WyomingServer, announce  # noqa: E402
from sori.serving.wyoming_server import server as server_module  # noqa: E402
from sori.serving.wyoming_server.satellite import SatelliteLink  # noqa: E402
from sori.serving.wyoming_server.wire import Limits  # noqa: E402
from wyoming_kit import (  # noqa: E402, F401 (the *_fixture ones)
    alive,
    config_file_fixture,
    config_fixture,
    converse,
    error_texts,
    kinds,
    records_fixture,
    server_fixture,
    services_fixture,
    serving,
)

MiB = 1 << 20


# -- connections and time ------------------------------------------------------------------


def test_connections_past_the_cap_get_an_error_and_are_closed_logged_once(services, records):
    with serving(services, Limits(max_connections=2)) as srv:
        held = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(2)]
        try:
            time.sleep(0.2)  # both accepted
            for _ in range(4):
                got = converse(srv.port)
                assert kinds(got) == ["error", "closed"], got
                assert "busy" in error_texts(got) and "2 connections" in error_texts(got)
            busy = [line for line in records.lines() if "max_connections" in line]
            assert len(busy) == 1, records.lines()
            held.pop().close()
            time.sleep(0.2)  # the slot is free again
            alive(srv.port)
        finally:
            for s in held:
                s.close()
    assert records.crashes() == []


def test_a_silent_client_is_told_and_closed_after_the_idle_timeout(services, records):
    with serving(services, Limits(idle_timeout_s=0.5)) as srv:
        start = time.monotonic()
        got = converse(srv.port)
        assert kinds(got) == ["error", "closed"] and "no event for 0.5 s" in error_texts(got)
        assert 0.4 < time.monotonic() - start < 3
        # a header line that never ends is the same: it must come whole within the timeout
        got = converse(srv.port, raw=b'{"type": "pi')
        assert kinds(got) == ["error", "closed"]

        async def chatty() -> list:
            # a client that keeps talking stays, however long it stays
            client = AsyncTcpClient("127.0.0.1", srv.port)
            await client.connect()
            kinds = []
            for _ in range(5):
                await client.write_event(Ping().event())
                kinds.append((await asyncio.wait_for(client.read_event(), 5)).type)
                await asyncio.sleep(0.3)
            await client.disconnect()
            return kinds

        assert asyncio.run(chatty()) == ["pong"] * 5
    assert records.crashes() == []


@pytest.mark.parametrize(
    "frame",
    [
        b'{"type": "ping", "payload_length": 1000}\n' + bytes(10),
        b'{"type": "ping", "data_length": 500}\n{"text": "hi"',
    ],
    ids=["payload", "data"],
)
def test_an_event_shorter_than_its_lengths_is_not_waited_for(services, records, frame):
    with serving(services, Limits(event_timeout_s=0.5)) as srv:
        start = time.monotonic()
        got = converse(srv.port, raw=frame)
        assert kinds(got) == ["error", "closed"], got
        assert "did not come within 0.5 s" in error_texts(got)
        assert time.monotonic() - start < 3
        assert len(records.lines()) == 1, records.lines()
        alive(srv.port)
    assert records.crashes() == []


# -- audio -----------------------------------------------------------------------------------


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_audio_held_for_one_request_is_bounded_by_bytes(services, records):
    """48 kHz / 4 bytes / 8 channels (a format that is held, then converted at the end):
    32 MiB sent against a 1 MiB bound. The server stops holding past the bound, answers
    one error, drops the rest of the stream, and serves on; memory barely moves."""
    chunk = bytes(256 << 10)
    fmt = {"rate": 48000, "width": 4, "channels": 8}
    peak = [0]
    sending = threading.Event()

    def watch() -> None:
        while sending.is_set():
            peak[0] = max(peak[0], _rss_bytes())
            time.sleep(0.005)

    with serving(services, Limits(max_audio_bytes=1 * MiB)) as srv:
        alive(srv.port)
        events = [Transcribe(), AudioStart(**fmt)]
        events += [AudioChunk(**fmt, audio=chunk)] * 128 + [AudioStop(), Ping()]
        before = _rss_bytes()
        sending.set()
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            got = converse(srv.port, events=events, timeout_s=30)
        finally:
            sending.clear()
            watcher.join()
    assert kinds(got) == ["error", "pong"], got  # one error, not one per chunk
    assert "more than 1 MiB of audio" in error_texts(got)
    assert peak[0] - before < 12 * MiB, f"{(peak[0] - before) / MiB:.1f} MiB more memory"
    assert records.crashes() == []


@pytest.mark.parametrize(
    "fmt, said",
    [
        ({"rate": 192000, "width": 4, "channels": 32}, "192000 Hz"),
        ({"rate": 16000, "width": 2, "channels": 32}, "32 channels"),
        ({"rate": 10**9, "width": 2, "channels": 1}, "1000000000 Hz"),
        ({"rate": 16000, "width": 3, "channels": 1}, "width 3"),
        ({"rate": 16000, "width": 2, "channels": 0}, "0 channels"),
        ({"rate": 16000.5, "width": 2, "channels": 1}, "rate must be a whole number"),
        ({"rate": 16000, "width": True, "channels": 1}, "width must be a whole number"),
        ({"rate": "16000", "width": 2, "channels": 1}, "rate must be a whole number"),
    ],
)
def test_absurd_formats_are_refused_at_audio_start(server, fmt, said):
    """One error for the stream; its chunks and stop are dropped without another."""
    chunk = Event("audio-chunk", dict(fmt), bytes(64))
    got = converse(
        server.port,
        events=[Transcribe(), Event("audio-start", fmt), chunk, chunk, AudioStop(), Ping()],
    )
    assert kinds(got) == ["error", "pong"], got
    assert said in error_texts(got) and error_texts(got).count("audio-start") == 1, error_texts(got)


def test_the_satellite_refuses_absurd_reply_audio():
    """Home Assistant's reply audio on the satellite's link: an absurd rate is refused
    at audio-start, before any reply is held."""
    link = SatelliteLink(player=None, name="sori")

    async def main() -> None:
        with pytest.raises(AudioError, match="1000000000 Hz"):
            await link.on_event(None, AudioStart(rate=10**9, width=2, channels=1).event())
        with pytest.raises(ValueError, match="16-bit mono"):
            await link.on_event(None, AudioStart(rate=22050, width=4, channels=1).event())

    asyncio.run(main())


# -- hostile headers -------------------------------------------------------------------------

DEEP = 100_000

HOSTILE = {
    # past the 64 KiB a header line may have: the rest cannot be trusted, so it ends
    "100k-deep header": (b"[" * DEEP + b"]" * DEEP + b"\n", "longer than", True),
    "deep header within the line limit": (
        b'{"type": "ping", "data": ' + b"[" * 30_000 + b"]" * 30_000 + b"}\n",
        "nested too deeply",
        False,
    ),
    "100k-deep data": (
        b'{"type": "ping", "data_length": %d}\n' % (2 * DEEP) + b"[" * DEEP + b"]" * DEEP,
        "nested too deeply",
        False,
    ),
    "5,000-digit integer in a header": (
        b'{"type": "audio-start", "data": {"rate": ' + b"9" * 5000 + b"}}\n",
        "integer",
        False,
    ),
    "5,000-digit payload_length": (
        b'{"type": "ping", "payload_length": ' + b"9" * 5000 + b"}\n",
        "integer",
        False,
    ),
    "4,000-digit payload_length": (
        b'{"type": "ping", "payload_length": ' + b"9" * 4000 + b"}\n",
        "over the",
        True,
    ),
    "transcribe language 5": (
        b'{"type": "transcribe", "data": {"language": 5}}\n',
        "transcribe: language must be text",
        False,
    ),
    "synthesize voice 5": (
        b'{"type": "synthesize", "data": {"text": "hi", "voice": 5}}\n',
        "synthesize: voice must be an object",
        False,
    ),
    "recognize text list": (
        b'{"type": "recognize", "data": {"text": ["a"]}}\n',
        "recognize: text must be text",
        False,
    ),
    "ping text object": (b'{"type": "ping", "data": {"text": {}}}\n', "ping: text", False),
    "boolean payload_length": (
        b'{"type": "ping", "payload_length": true}\n',
        "payload_length must be",
        True,
    ),
    "type a list": (b'{"type": ["ping"]}\n', '"type" string', False),
    "header a list": (b"[1, 2]\n", '"type" string', False),
    "not UTF-8": (b'{"type": "\xff"}\n', "UTF-8", False),
    "lone surrogate": (
        b'{"type": "ping", "data": {"text": "\\ud800"}}\n',
        "not valid Unicode",
        False,
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_headers_get_an_error_event_and_one_log_line(server, records, name):
    raw, said, closes = HOSTILE[name]
    # a ping after it, unless the connection ends (a write to it could lose the error)
    got = converse(server.port, raw=raw, events=[] if closes else [Ping()])
    assert kinds(got) == (["error", "closed"] if closes else ["error", "pong"]), got
    assert said in error_texts(got), error_texts(got)
    assert len(records.lines()) == 1, records.lines()
    assert records.crashes() == []
    alive(server.port)


# -- zeroconf --------------------------------------------------------------------------------


def test_a_loopback_address_is_never_announced():
    for host in ("127.0.0.1", "127.4.5.6", "::1", "localhost"):
        assert announce.announced_address(host) is None, host
    assert announce.announced_address("192.0.2.7") == "192.0.2.7"
    assert announce.announced_address("2001:db8::7") == "2001:db8::7"


@pytest.mark.parametrize("uri", ["tcp://127.0.0.1:0", "tcp://127.0.0.2:0", "tcp://localhost:0"])
def test_a_loopback_server_constructs_no_announcer(monkeypatch, records, uri):
    """No zeroconf object is made (no multicast socket opened) for a loopback server;
    a test double stands in for Announcer, failing if it is ever built."""

    class NoAnnouncer:
        def __init__(self, info) -> None:
            raise AssertionError(f"announced {info} on the LAN for a loopback server")

    monkeypatch.setattr(server_module, "Announcer", NoAnnouncer)
    srv = WyomingServer(None, uri, announce_as="sori-test")

    async def main() -> None:
        await srv.start()
        assert srv._announcer is None
        await srv.close()

    asyncio.run(main())
    assert any("reachable from this machine only" in line for line in records.lines())


def test_a_unix_socket_server_constructs_no_announcer(monkeypatch, tmp_path):
    monkeypatch.setattr(server_module, "Announcer", None)  # calling it would fail
    srv = WyomingServer(None, f"unix://{tmp_path}/wyoming.sock", announce_as="sori-test")

    async def main() -> None:
        await srv.start()
        assert srv._announcer is None
        await srv.close()

    asyncio.run(main())
