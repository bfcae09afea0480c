"""The wire: events read from a client (a malformed one is an error the client hears
about, not the end of the stream) and the client's audio as the recognizer hears it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sori.audio.format import RATE_HZ, check_channels, check_rate, decode_raw, to_pipeline
from sori.errors import AudioError
from sori.stt.base import FRAME_BYTES

MAX_EVENT_BYTES = 16 << 20
"""Largest data or payload one event may carry, in bytes; more closes the connection."""

MAX_UTTERANCE_S = 300
"""Longest audio one transcribe or detect request may send, in seconds."""

WIDTH_FORMATS = {1: "u8", 2: "s16le", 4: "s32le"}
"""Wyoming sample width in bytes → the raw sample format sori.audio.format decodes."""


class BadEvent(Exception):
    """An event that could not be read or understood; the client gets an error event."""


async def read_event(reader: asyncio.StreamReader) -> Any:
    """The next event; None at the end of the stream. Unlike `wyoming.event`, a malformed
    one raises BadEvent instead of looking like the end of the stream."""
    from wyoming.event import Event

    try:
        line = await reader.readline()
    except (ValueError, asyncio.LimitOverrunError) as exc:  # a header line past the limit
        raise ConnectionError(f"event header too long: {exc}") from None
    if not line:
        return None
    if not line.endswith(b"\n"):
        return None  # cut off by the end of the stream
    try:
        header = json.loads(line)
        if not isinstance(header, dict) or not isinstance(header.get("type"), str):
            raise BadEvent('an event header is a JSON object with a "type" string')
        data = header.get("data") or {}
        data_length = _length(header, "data_length")
        payload_length = _length(header, "payload_length")
        if data_length:
            extra = json.loads(await reader.readexactly(data_length))
            if not isinstance(extra, dict) or not isinstance(data, dict):
                raise BadEvent("event data must be a JSON object")
            data = {**data, **extra}
        payload = await reader.readexactly(payload_length) if payload_length else None
    except json.JSONDecodeError as exc:
        raise BadEvent(f"not a JSON event header: {exc}") from None
    except UnicodeDecodeError:
        raise BadEvent("event header is not UTF-8") from None
    if not isinstance(data, dict):
        raise BadEvent("event data must be a JSON object")
    return Event(type=header["type"], data=data, payload=payload)


def _length(header: dict, key: str) -> int:
    value = header.get(key) or 0
    if not isinstance(value, int) or value < 0:
        raise BadEvent(f"{key} must be a non-negative integer")
    if value > MAX_EVENT_BYTES:
        raise ConnectionError(f"{key} {value} is over the {MAX_EVENT_BYTES} byte limit")
    return value


class AudioIn:
    """One audio stream from the client, as 20 ms frames of 16 kHz mono s16le: streamed
    through as it comes when the client sends that format, else gathered and converted
    at the end (a whole-utterance resample has no seams between chunks)."""

    def __init__(self, rate_hz: int, width: int, channels: int, endless: bool = False) -> None:
        """`endless`: a stream with no end in view (`detect`: a satellite's microphone),
        not limited to `MAX_UTTERANCE_S` when it comes in the pipeline's format (nothing is
        held back then)."""
        if width not in WIDTH_FORMATS:
            raise AudioError(f"audio width {width} bytes: send 1, 2 or 4 (2 = 16-bit)")
        self.rate_hz = check_rate(rate_hz, "audio-start")
        self.width = width
        self.channels = check_channels(channels, "audio-start")
        self.native = (rate_hz, width, channels) == (RATE_HZ, 2, 1)
        self.limited = not (endless and self.native)
        self._held = bytearray()
        self._bytes = 0

    def push(self, chunk: Any) -> list[bytes]:
        """An audio-chunk in; whole frames ready for the recognizer out."""
        if (chunk.rate, chunk.width, chunk.channels) != (self.rate_hz, self.width, self.channels):
            raise AudioError(
                f"audio-chunk format {chunk.rate} Hz/{chunk.width} B/{chunk.channels} ch "
                f"differs from audio-start's {self.rate_hz}/{self.width}/{self.channels}"
            )
        self._bytes += len(chunk.audio)
        most = MAX_UTTERANCE_S * self.rate_hz * self.width * self.channels
        if self.limited and self._bytes > most:
            raise AudioError(f"more than {MAX_UTTERANCE_S} s of audio in one request")
        self._held += chunk.audio
        return self._frames() if self.native else []

    def end(self) -> list[bytes]:
        """The stream ended: what is left, the last frame padded with silence."""
        if not self.native:
            x = decode_raw(bytes(self._held), WIDTH_FORMATS[self.width], self.rate_hz,
                           self.channels)  # fmt: skip
            self._held = bytearray(to_pipeline(x, self.rate_hz))
        frames = self._frames()
        if self._held:
            frames.append(bytes(self._held).ljust(FRAME_BYTES, b"\0"))
            self._held.clear()
        return frames

    def _frames(self) -> list[bytes]:
        whole = len(self._held) // FRAME_BYTES * FRAME_BYTES
        frames = [bytes(self._held[i : i + FRAME_BYTES]) for i in range(0, whole, FRAME_BYTES)]
        del self._held[:whole]
        return frames
