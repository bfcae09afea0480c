"""A fuzz over Wyoming event frames (random header JSON, lengths that lie, payloads):
the wire alone gives an event or a SoriError, and the real server over loopback TCP
answers with an error event, a normal answer or a closed connection, never a traceback."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

pytest.importorskip("wyoming")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from wyoming.ping import Ping  # noqa: E402

from sori.core.errors import AudioError, SoriError  # noqa: E402
from sori.serving.wyoming_server.wire import AudioIn, BadEvent, Limits, check_fields, read_event  # noqa: E402
from wyoming_kit import (  # noqa: E402, F401 (the *_fixture ones)
    Records,
    alive,
    config_file_fixture,
    config_fixture,
    converse,
    kinds,
    services_fixture,
    serving,
)

TYPES = [
    "ping", "describe", "recognize", "transcribe", "audio-start", "audio-chunk", "audio-stop",
    "detect", "synthesize", "run-satellite", "pause-satellite", "error", "transcript",
]  # fmt: skip
FIELDS = ["text", "language", "rate", "width", "channels", "names", "voice", "name", "context"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),  # fmt: skip
    max_leaves=8,
)
event_data = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=4) | json_values


@st.composite
def frames(draw) -> bytes:
    """One Wyoming frame: a header (often a real event type, sometimes not a JSON object),
    data and payload whose declared lengths are mostly honest and sometimes lie."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=64)) + b"\n"
    header: dict = {"type": draw(st.sampled_from(TYPES) | st.text(max_size=6))}
    if draw(st.booleans()):
        header["data"] = draw(event_data)
    extra = json.dumps(draw(event_data)).encode() if draw(st.booleans()) else b""
    payload = draw(st.binary(max_size=256))
    lie = st.sampled_from([0, 0, 0, 0, 1, -1, 7]) | st.sampled_from([True, None, "3", 1.5])
    for key, body in (("data_length", extra), ("payload_length", payload)):
        shift = draw(lie)
        if body or shift:
            header[key] = len(body) + shift if isinstance(shift, int) else shift
    return json.dumps(header).encode() + b"\n" + extra + payload


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames(), min_size=1, max_size=4))
def test_read_event_gives_an_event_or_a_sori_error(stream):
    """The wire alone: every frame read is an event (whose fields pass or fail with
    BadEvent) or a SoriError; the end of the stream, cut anywhere, is None."""

    async def main() -> None:
        reader = asyncio.StreamReader(limit=1 << 16)
        reader.feed_data(b"".join(stream))
        reader.feed_eof()
        for _ in range(len(stream) + 1):
            try:
                event = await read_event(reader)
            except SoriError:
                return  # a Hangup or a BadEvent: the handler answers with an error event
            if event is None:
                return
            try:
                check_fields(event)
                if event.type == "audio-start":
                    AudioIn(event.data["rate"], event.data["width"], event.data["channels"])
            except (BadEvent, AudioError):
                pass

    asyncio.run(main())


def test_fuzzed_frames_never_crash_the_server(services):
    """Random frames to the real server, each followed by a ping: an error event, a
    normal answer or the connection closed, and never a traceback; the server serves on."""
    handler = Records()
    logging.getLogger().addHandler(handler)
    try:
        with serving(services, Limits(event_timeout_s=0.2, idle_timeout_s=0.3)) as srv:

            @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
            @given(st.lists(frames(), min_size=1, max_size=3))
            def check(stream: list[bytes]) -> None:
                got = converse(srv.port, raw=b"".join(stream), events=[Ping()])
                assert kinds(got)[-1] in ("pong", "closed"), got
                assert handler.crashes() == []

            check()
            alive(srv.port)
    finally:
        logging.getLogger().removeHandler(handler)
