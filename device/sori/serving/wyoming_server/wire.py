"""The wire: events read from a client (a malformed one is an error the client hears
about, not the end of the stream), what one client may take of the server, and the
client's audio as the recognizer hears it."""

from __future__ import annotations

import asyncio
import json
import reprlib
import sys
from dataclasses import dataclass
from typing import Any

from sori.core.errors import AudioError, SoriError
from sori.hearing.audio.format import MIN_RATE_HZ, RATE_HZ, decode_raw, to_pipeline
from sori.hearing.stt.base import FRAME_BYTES

MiB = 1 << 20

MAX_HEADER_BYTES = 1 << 16
"""Longest event header line, in bytes (the server's stream limit; Wyoming's headers are
a few hundred bytes, the data and payload come after them)."""

MAX_EVENT_BYTES = 16 * MiB
"""Largest data or payload one event may carry, in bytes; more closes the connection."""

MAX_TYPE_CHARS = 64
"""Longest event type ("audio-chunk", "run-satellite"): a longer one is not an event."""

EVENT_TIMEOUT_S = 10.0
"""Seconds an event's data and payload may take to arrive once its header has come."""

MAX_AUDIO_BYTES = 16 * MiB
"""Audio held for one request, in bytes (see `Limits.max_audio_bytes`)."""

MAX_UTTERANCE_S = 300
"""Longest audio one transcribe or detect request may send, in seconds."""

MAX_RATE_HZ = 48_000
"""Highest sample rate taken from a client: speech needs 16 kHz, sound cards give 48."""

MAX_CHANNELS = 8
"""Most channels taken from a client (a microphone array's raw channels)."""

WIDTH_FORMATS = {1: "u8", 2: "s16le", 4: "s32le"}
"""Wyoming sample width in bytes → the raw sample format sori.hearing.audio.format decodes."""

SEND_THIS = "send 16 kHz 16-bit mono (rate 16000, width 2, channels 1)"

NOT_AN_EVENT = 'an event header is a JSON object with a "type" string'


@dataclass(frozen=True)
class Limits:
    """What one client may take of the server: connections, time and memory ([wyoming]
    max_connections, idle_timeout_s and max_audio_mb in sori.toml)."""

    max_connections: int = 8
    """Connections served at once; one more is told the server is busy and closed."""
    idle_timeout_s: float = 60.0
    """Seconds a connection may send no event (or read no answer) before it is closed;
    Home Assistant pings the satellite's connection, which has no such limit."""
    event_timeout_s: float = EVENT_TIMEOUT_S
    """Seconds an event's data and payload may take to come once its header came."""
    max_audio_bytes: int = MAX_AUDIO_BYTES
    """Audio held for one request, in bytes of the client's format: 16 kHz 16-bit mono
    streams to the recognizer and holds nothing; any other format is held, then
    converted at audio-stop."""


DEFAULT_LIMITS = Limits()


class BadEvent(SoriError):
    """An event that could not be read or understood; the client gets an error event and
    the connection carries on."""


class Hangup(SoriError):
    """The connection cannot go on: a client silent for too long, an event that never came
    whole, lengths that cannot be trusted. The client gets an error event, then is closed."""

    def __init__(self, text: str, code: str) -> None:
        super().__init__(text)
        self.code = code
        """The error event's code: "timeout", "too-large" or "bad-event"."""


async def read_event(
    reader: asyncio.StreamReader,
    idle_timeout_s: float | None = None,
    event_timeout_s: float = EVENT_TIMEOUT_S,
) -> Any:
    """The next event; None at the end of the stream (or a stream cut mid-event). Unlike
    `wyoming.event`, a malformed event raises BadEvent instead of looking like the end of
    the stream. The header line must come whole within `idle_timeout_s` (None: no limit),
    the data and payload it announces within `event_timeout_s`, else Hangup."""
    from wyoming.event import Event

    try:
        line = await asyncio.wait_for(reader.readline(), idle_timeout_s)
    except TimeoutError:
        raise Hangup(f"no event for {idle_timeout_s:g} s; connection closed", "timeout") from None
    except ValueError:  # past the stream's limit; where the next event starts is unknown
        raise Hangup(
            f"an event header is longer than {MAX_HEADER_BYTES} bytes; connection closed",
            "too-large",
        ) from None
    if not line.endswith(b"\n"):
        return None  # the end of the stream, or a header cut off by it
    header = _json(line, "event header")
    if not isinstance(header, dict):
        raise BadEvent(NOT_AN_EVENT)
    data_length, payload_length = _length(header, "data_length"), _length(header, "payload_length")
    try:
        extra, payload = await asyncio.wait_for(
            _body(reader, data_length, payload_length), event_timeout_s
        )
    except TimeoutError:
        parts = (("data", data_length), ("payload", payload_length))
        announced = " and ".join(f"{n} bytes of {part}" for part, n in parts if n)
        raise Hangup(
            f"the {announced} an event header announced did not come within "
            f"{event_timeout_s:g} s; connection closed",
            "timeout",
        ) from None
    except asyncio.IncompleteReadError:
        return None  # the client left mid-event
    # The body was read first, so a header refused here leaves the stream at the next one.
    kind = header.get("type")
    if not isinstance(kind, str) or not 0 < len(kind) <= MAX_TYPE_CHARS:
        raise BadEvent(NOT_AN_EVENT)
    data = header.get("data")
    data = {} if data is None else data
    if extra:
        more = _json(extra, "event data")
        if not isinstance(more, dict) or not isinstance(data, dict):
            raise BadEvent(f"{kind}: event data must be a JSON object")
        data = {**data, **more}
    if not isinstance(data, dict):
        raise BadEvent(f"{kind}: event data must be a JSON object")
    return Event(type=kind, data=data, payload=payload)


async def _body(reader: asyncio.StreamReader, data_length: int, payload_length: int) -> tuple:
    extra = await reader.readexactly(data_length) if data_length else b""
    payload = await reader.readexactly(payload_length) if payload_length else None
    return extra, payload


def _json(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except RecursionError:  # the decoder recurses once per nesting level
        raise BadEvent(f"{what} is nested too deeply") from None
    except UnicodeDecodeError:
        raise BadEvent(f"{what} is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise BadEvent(f"{what} is not JSON: {exc}") from None
    except ValueError:  # int() refuses a number this long (a slow conversion otherwise)
        raise BadEvent(
            f"{what} has an integer of more than {sys.get_int_max_str_digits()} digits"
        ) from None


def _length(header: dict, key: str) -> int:
    """A declared length; one that cannot be trusted ends the connection, since where the
    next event starts is then unknown."""
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Hangup(f"{key} must be a whole number of bytes; connection closed", "bad-event")
    if value > MAX_EVENT_BYTES:
        raise Hangup(
            f"{key} is over the {MAX_EVENT_BYTES // MiB} MiB an event may carry; connection closed",
            "too-large",
        )
    return value


FIELDS: dict[str, dict[str, tuple[type, bool]]] = {
    "transcribe": {"language": (str, False)},
    "audio-start": {"rate": (int, True), "width": (int, True), "channels": (int, True)},
    "audio-chunk": {"rate": (int, True), "width": (int, True), "channels": (int, True)},
    "recognize": {"text": (str, True)},
    "synthesize": {"text": (str, True), "voice": (dict, False)},
    "ping": {"text": (str, False)},
    "transcript": {"text": (str, True)},
    "error": {"text": (str, True), "code": (str, False)},
}
"""The fields Sori reads of each event it serves (or the wyoming package parses for it):
their JSON type, and whether the event needs them. Fields nobody reads are left alone,
as Wyoming peers do."""

KIND_WORDS = {str: "text", int: "a whole number", dict: "an object"}


def check_fields(event: Any) -> None:
    """Refuse (BadEvent) an event whose fields Sori reads have the wrong JSON type, so no
    request fails deep inside on a number where text belongs."""
    for name, (kind, needed) in FIELDS.get(event.type, {}).items():
        value = event.data.get(name)
        if value is None:
            if needed:
                raise BadEvent(f"{name} is missing")
        elif isinstance(value, bool) or not isinstance(value, kind):
            raise BadEvent(f"{name} must be {KIND_WORDS[kind]}, got {reprlib.repr(value)}")
        elif kind is str and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise BadEvent(f"{name} is not valid Unicode (a lone surrogate)") from None


def check_format(rate_hz: int, width: int, channels: int) -> None:
    """Refuse (AudioError) an audio format no speech client sends; whole numbers are
    assumed (`check_fields`)."""
    if not MIN_RATE_HZ <= rate_hz <= MAX_RATE_HZ:
        raise AudioError(
            f"{rate_hz} Hz is outside the {MIN_RATE_HZ}-{MAX_RATE_HZ} Hz taken here; " + SEND_THIS
        )
    if width not in WIDTH_FORMATS:
        raise AudioError(f"width {width} bytes: send 1, 2 or 4 (2 = 16-bit)")
    if not 1 <= channels <= MAX_CHANNELS:
        raise AudioError(
            f"{channels} channels is outside the 1-{MAX_CHANNELS} taken here; " + SEND_THIS
        )


MAX_WAV_HEADER_BYTES = 64 * 1024
"""Most bytes a WAV header may take before its audio (a few metadata chunks)."""


class AudioIn:
    """One audio stream from the client, as 20 ms frames of 16 kHz mono s16le: streamed
    through as it comes when the client sends that format, else gathered and converted
    at the end (a whole-utterance resample has no seams between chunks), at most
    `max_bytes` of it."""

    def __init__(
        self,
        rate_hz: int,
        width: int,
        channels: int,
        endless: bool = False,
        max_bytes: int = MAX_AUDIO_BYTES,
    ) -> None:
        """`endless`: a stream with no end in view (`detect`: a satellite's microphone),
        not limited to `MAX_UTTERANCE_S` when it comes in the pipeline's format (nothing is
        held back then)."""
        self.declared = (rate_hz, width, channels)
        """audio-start's format, which every audio-chunk must state."""
        self.endless = endless
        self.max_bytes = max_bytes
        self._use(rate_hz, width, channels)
        self._held = bytearray()
        self._bytes = 0
        self._opening: bytearray | None = bytearray()
        """The stream's first bytes while they may still be a WAV file's header; None
        once the audio itself flows."""

    def _use(self, rate_hz: int, width: int, channels: int) -> None:
        """The format the stream's bytes are in."""
        check_format(rate_hz, width, channels)
        self.rate_hz, self.width, self.channels = rate_hz, width, channels
        self.native = (rate_hz, width, channels) == (RATE_HZ, 2, 1)
        self.limited = not (self.endless and self.native)

    def push(self, chunk: Any) -> list[bytes]:
        """An audio-chunk in; whole frames ready for the recognizer out."""
        if (chunk.rate, chunk.width, chunk.channels) != self.declared:
            rate, width, channels = self.declared
            raise AudioError(
                f"audio-chunk format {chunk.rate} Hz/{chunk.width} B/{chunk.channels} ch "
                f"differs from audio-start's {rate}/{width}/{channels}"
            )
        audio = chunk.audio if self._opening is None else self._past_header(chunk.audio)
        self._bytes += len(audio)
        most = MAX_UTTERANCE_S * self.rate_hz * self.width * self.channels
        if self.limited and self._bytes > most:
            raise AudioError(f"more than {MAX_UTTERANCE_S} s of audio in one request")
        if len(self._held) + len(audio) > self.max_bytes:
            raise AudioError(
                f"more than {self.max_bytes / MiB:g} MiB of audio held for one request; "
                f"{SEND_THIS} (streamed, nothing held), or less of it"
            )
        self._held += audio
        return self._frames() if self.native else []

    def _past_header(self, data: bytes) -> bytes:
        """`data` after a WAV file's header, when the stream opens with one (Home
        Assistant's speech-to-text API passes a WAV body on as it is: heard as sound, its
        44 bytes would shift every sample after them); the header's `fmt ` says what the
        bytes are. b"" while the header is not whole yet; `data` itself when the stream
        opens with plain samples."""
        assert self._opening is not None
        opening = self._opening + data
        if len(opening) < 12:
            self._opening = opening
            return b""
        if opening[:4] != b"RIFF" or opening[8:12] != b"WAVE":
            self._opening = None
            return bytes(opening)
        at = 12
        while at + 8 <= len(opening):
            kind, size = (
                bytes(opening[at : at + 4]),
                int.from_bytes(opening[at + 4 : at + 8], "little"),
            )
            if kind == b"data":  # its size may be a streaming writer's 0 or 2**32 - 1
                self._opening = None
                return bytes(opening[at + 8 :])
            if kind == b"fmt " and at + 24 <= len(opening):
                self._wav_format(bytes(opening[at + 8 : at + 24]))
            elif kind == b"fmt ":
                break  # the rest of it comes with the next chunk
            at += 8 + size + (size & 1)
        if len(opening) > MAX_WAV_HEADER_BYTES:
            raise AudioError(
                f"a WAV header without its audio in the first {MAX_WAV_HEADER_BYTES} bytes; "
                f"{SEND_THIS}"
            )
        self._opening = opening
        return b""

    def _wav_format(self, fmt: bytes) -> None:
        tag, channels, rate_hz = int.from_bytes(fmt[0:2], "little"), int.from_bytes(
            fmt[2:4], "little"), int.from_bytes(fmt[4:8], "little")  # fmt: skip
        bits = int.from_bytes(fmt[14:16], "little")
        if tag not in (1, 0xFFFE) or bits % 8:
            raise AudioError(f"a WAV file of format {tag} ({bits}-bit); {SEND_THIS}")
        self._use(rate_hz, bits // 8, channels)

    def end(self) -> list[bytes]:
        """The stream ended: what is left, the last frame padded with silence."""
        opening, self._opening = self._opening, None
        if opening and not opening.startswith(b"RIFF"):  # a few samples, never a header
            self._held += opening
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
