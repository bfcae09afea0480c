"""Sori as a Wyoming server: Home Assistant's voice pipeline (and any Wyoming client) can
use Sori's speech-to-text, preset intent recognition, voice and, where a detector is
given, wake-phrase detection.

    describe                                  → info
    transcribe, audio-start, audio-chunk..., audio-stop → transcript
    recognize                                 → intent | not-recognized
    synthesize                                → audio-start, audio-chunk..., audio-stop
    detect, audio-start, audio-chunk..., audio-stop     → detection... | not-detected
    ping                                      → pong

The models are loaded once per server (`load_services`, through `sori.assemble`) and
shared by every connection; each model is used by one connection at a time (a lock per
model), one call at a time, so connections interleave. Nothing here acts on the world:
`recognize` answers with the intent and slots and Home Assistant decides what to do.
The protocol has no authentication: anyone who can reach the port can use these services.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import urlparse

from sori import __version__
from sori.assemble.hearing import build_recognizer
from sori.assemble.speaking import build_voice, replies, voice_backend
from sori.assemble.understanding import presets_from_config
from sori.audio.format import RATE_HZ, check_channels, check_rate, decode_raw, to_pipeline
from sori.config import Config
from sori.errors import AudioError, ConfigError, DependencyError
from sori.home import Home
from sori.stt.base import FRAME_BYTES, SpeechRecognizer
from sori.tts.base import Voice

log = logging.getLogger(__name__)

T = TypeVar("T")

SERVICE_TYPE = "_wyoming._tcp.local."
"""The zeroconf service type Home Assistant browses for Wyoming servers."""
CHUNK_SAMPLES = 1024
"""Samples per synthesized audio-chunk event (what Wyoming's own voices send)."""
MAX_EVENT_BYTES = 16 << 20
"""Largest data or payload one event may carry, in bytes; more closes the connection."""
MAX_UTTERANCE_S = 300
"""Longest audio one transcribe or detect request may send, in seconds."""
WIDTH_FORMATS = {1: "u8", 2: "s16le", 4: "s32le"}
"""Wyoming sample width in bytes → the raw sample format sori.audio.format decodes."""
ATTRIBUTION = ("Sori", "")
"""Who made the programs the info lists, and where they are from (no public address yet)."""


def require_wyoming() -> None:
    """The `wyoming` package, or an error naming the extra that installs it."""
    try:
        import wyoming  # noqa: F401
    except ImportError:
        raise DependencyError(
            "the Wyoming server needs the wyoming package: pip install 'sori[wyoming]'"
        ) from None


class WakeStream(Protocol):
    """One audio stream through a wake detector (the shape of `sori.wake`'s streams)."""

    def feed(self, pcm: bytes) -> list[Any]:
        """16 kHz mono s16le in; detections (each with a `phrase`) completed by it."""
        ...

    def finish(self) -> list[Any]:
        """No more audio: detections still pending."""
        ...


class WakePhrases(Protocol):
    """A loaded wake-phrase detector (the shape of `sori.wake`'s `WakeDetector`)."""

    name: str
    phrases: list[str]

    def open_stream(self) -> WakeStream: ...


@dataclass
class Services:
    """What the server answers with: every model loaded once, shared by all connections."""

    language: str
    """Language of speech and text ("ko"), as [intents] language says."""
    recognizer: SpeechRecognizer
    """The configured speech-to-text backend, loaded."""
    understanding: Any
    """The preset matcher (`match(text)` → an IntentMatch or None)."""
    voice: Voice
    """The configured voice."""
    voice_name: str
    """The voice's name in the info (backend and model)."""
    not_understood: str
    """The reply sent with not-recognized."""
    detector: WakePhrases | None = None
    """A wake-phrase detector, when one is configured; `detect` is refused without."""
    locks: dict[str, threading.Lock] = field(
        default_factory=lambda: {
            "stt": threading.Lock(),
            "tts": threading.Lock(),
            "wake": threading.Lock(),
        }  # fmt: skip
    )
    """One lock per model: each is used by one connection at a time."""


def voice_name(config: Config) -> str:
    """The configured voice as the info names it: "espeak-ko", "vits-mms-kor", ..."""
    backend = voice_backend(config)
    t = config.tts
    detail = {
        "espeak": t.espeak.voice or config.intents.language,
        "piper": t.piper.model.rsplit("/", 1)[-1].removesuffix(".onnx"),
        "vits": t.vits.voice or t.vits.model_dir.rstrip("/").rsplit("/", 1)[-1],
    }.get(backend, "")
    return f"{backend}-{detail}" if detail else backend


def load_services(
    config: Config,
    home: Home,
    understanding: Any = None,
    voice: Voice | None = None,
    detector: WakePhrases | None = None,
) -> Services:
    """Every model the server needs, from the config (blocking: models load here). The
    daemon passes its own understanding (reloads reach it) and voice."""
    require_wyoming()
    if understanding is None:
        understanding = presets_from_config(config.intents, home)
    phrases = understanding.phrases(config.stt.phrases.max_phrases)
    recognizer = build_recognizer(config.stt, phrases, config.audio, config.vad.pre_roll_ms)
    return Services(
        language=config.intents.language,
        recognizer=recognizer,
        understanding=understanding,
        voice=voice if voice is not None else build_voice(config),
        voice_name=voice_name(config),
        not_understood=replies(config.intents.language)["not_understood"],
        detector=detector,
    )


def describe(services: Services) -> Any:
    """The `info` Sori answers `describe` with: ASR, TTS, intent and (with a detector)
    wake programs, each in Sori's language."""
    from wyoming.info import (
        AsrModel,
        AsrProgram,
        Attribution,
        Info,
        IntentModel,
        IntentProgram,
        TtsProgram,
        TtsVoice,
        WakeModel,
        WakeProgram,
    )

    by = Attribution(*ATTRIBUTION)
    lang = [services.language]
    stt = services.recognizer.name
    info = Info(
        asr=[
            AsrProgram(
                name="sori-stt",
                attribution=by,
                installed=True,
                version=__version__,
                description=f"Sori speech-to-text ({stt}), biased towards the home's commands",
                models=[
                    AsrModel(
                        name=stt,
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description=f"{stt} ({services.language})",
                        languages=lang,
                    )
                ],
            )  # fmt: skip
        ],
        tts=[
            TtsProgram(
                name="sori-tts",
                attribution=by,
                installed=True,
                version=__version__,
                description="Sori's voice",
                voices=[
                    TtsVoice(
                        name=services.voice_name,
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description=services.voice_name,
                        languages=lang,
                    )
                ],
            )  # fmt: skip
        ],
        intent=[
            IntentProgram(
                name="sori-intents",
                attribution=by,
                installed=True,
                version=__version__,
                description="Sori's preset sentences: Home Assistant intents and slots",
                models=[
                    IntentModel(
                        name="sori-presets",
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description="preset sentence packs",
                        languages=lang,
                    )
                ],
            )  # fmt: skip
        ],
    )
    if services.detector is not None:
        d = services.detector
        info.wake = [
            WakeProgram(
                name="sori-wake",
                attribution=by,
                installed=True,
                version=__version__,
                description=f"Sori wake phrases ({d.name})",
                models=[
                    WakeModel(
                        name=p,
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description=p,
                        languages=lang,
                        phrase=p,
                    )
                    for p in d.phrases
                ],
            )  # fmt: skip
        ]
    return info


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

    def __init__(self, rate_hz: int, width: int, channels: int) -> None:
        if width not in WIDTH_FORMATS:
            raise AudioError(f"audio width {width} bytes: send 1, 2 or 4 (2 = 16-bit)")
        self.rate_hz = check_rate(rate_hz, "audio-start")
        self.width = width
        self.channels = check_channels(channels, "audio-start")
        self.native = (rate_hz, width, channels) == (RATE_HZ, 2, 1)
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
        if self._bytes > MAX_UTTERANCE_S * self.rate_hz * self.width * self.channels:
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


def _json_value(value: Any) -> Any:
    """A slot value as JSON can carry it (numbers, text, lists); anything else as text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


class SoriHandler:
    """One client connection: events in, answers out, until the client leaves. An event
    that cannot be read or served gets an `error` event; the connection carries on."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, services: Services
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.services = services
        self.mode = ""
        """What the current audio is for: "transcribe", "detect" or "" (none asked)."""
        self.language: str | None = None
        self.audio: AudioIn | None = None
        self.stream: Any = None
        self.heard: list[str] = []

    async def run(self) -> None:
        try:
            while True:
                try:
                    event = await read_event(self.reader)
                except BadEvent as exc:
                    await self.error(str(exc), "bad-event")
                    continue
                if event is None:
                    break
                try:
                    await self.handle(event)
                except (BadEvent, AudioError, KeyError, TypeError, ValueError) as exc:
                    self._reset()
                    what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                    await self.error(f"{event.type}: {what}", "bad-event")
                except (ConnectionError, asyncio.IncompleteReadError):
                    raise
                except Exception as exc:  # a failure serving one request, not the server
                    log.exception("wyoming: %s failed", event.type)
                    self._reset()
                    await self.error(f"{event.type} failed: {exc}", "failed")
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("wyoming: client left: %s", exc)
        finally:
            self.writer.close()

    async def write(self, eventable: Any) -> None:
        from wyoming.event import async_write_event

        await async_write_event(eventable.event(), self.writer)

    async def error(self, text: str, code: str) -> None:
        from wyoming.error import Error

        log.info("wyoming: error sent: %s", text)
        await self.write(Error(text=text, code=code))

    async def handle(self, event: Any) -> None:
        from wyoming.asr import Transcribe
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.info import Describe, SelectProgram
        from wyoming.intent import Recognize
        from wyoming.ping import Ping, Pong
        from wyoming.tts import Synthesize
        from wyoming.wake import Detect

        if Describe.is_type(event.type):
            await self.write(describe(self.services))
        elif Transcribe.is_type(event.type):
            self._reset()
            self.mode, self.language = "transcribe", Transcribe.from_event(event).language
        elif Detect.is_type(event.type):
            if self.services.detector is None:
                raise BadEvent("no wake phrases are configured here ([wake] in sori.toml)")
            self._reset()
            self.mode = "detect"
        elif AudioStart.is_type(event.type):
            start = AudioStart.from_event(event)
            self.audio = AudioIn(start.rate, start.width, start.channels)
            self.mode = self.mode or "transcribe"  # audio alone is a transcription
            await self._open()
        elif AudioChunk.is_type(event.type):
            if self.audio is None:
                raise BadEvent("audio-chunk before audio-start")
            await self._feed(self.audio.push(AudioChunk.from_event(event)))
        elif AudioStop.is_type(event.type):
            if self.audio is None:
                raise BadEvent("audio-stop before audio-start")
            await self._feed(self.audio.end())
            await self._finish()
        elif Recognize.is_type(event.type):
            await self.write(self.recognize(Recognize.from_event(event).text))
        elif Synthesize.is_type(event.type):
            await self.synthesize(Synthesize.from_event(event).text)
        elif Ping.is_type(event.type):
            await self.write(Pong(text=event.data.get("text")))
        elif SelectProgram.is_type(event.type):
            pass  # one program per kind: whichever is named, it is that one
        else:
            raise BadEvent(
                f"unknown event type {event.type!r}; this server answers describe, transcribe, "
                "audio-start/-chunk/-stop, recognize, synthesize, detect and ping"
            )

    async def _locked(self, name: str, work: Callable[..., T], *args: Any) -> T:
        lock = self.services.locks[name]

        def locked() -> T:
            with lock:
                return work(*args)

        return await asyncio.to_thread(locked)

    async def _open(self) -> None:
        if self.mode == "detect":
            self.stream = await self._locked("wake", self.services.detector.open_stream)
        else:
            self.stream = await self._locked("stt", self.services.recognizer.open_stream)
        self.heard = []

    async def _feed(self, frames: list[bytes]) -> None:
        if not frames:
            return
        stream = self.stream

        def feed() -> list[str]:
            found: list[str] = []
            for frame in frames:
                result = stream.feed(frame)
                if self.mode == "detect":
                    found += [d.phrase for d in result]
            return found

        heard = await self._locked("wake" if self.mode == "detect" else "stt", feed)
        await self._detected(heard)

    async def _detected(self, phrases: list[str]) -> None:
        from wyoming.wake import Detection

        for phrase in phrases:
            self.heard.append(phrase)
            await self.write(Detection(name=phrase))

    async def _finish(self) -> None:
        from wyoming.asr import Transcript
        from wyoming.wake import NotDetected

        stream, mode = self.stream, self.mode
        self._reset()
        if mode == "detect":
            await self._detected([d.phrase for d in await self._locked("wake", stream.finish)])
            if not self.heard:
                await self.write(NotDetected())
            return
        final = await self._locked("stt", stream.finalize)
        log.info("wyoming: transcribed %r", final.text)
        await self.write(Transcript(text=final.text, language=self.services.language))

    def _reset(self) -> None:
        self.mode, self.audio, self.stream = "", None, None

    def recognize(self, text: str) -> Any:
        """`intent` with the Home Assistant intent name and slots as entities, or
        `not-recognized` with Sori's "not understood" reply."""
        from wyoming.intent import Entity, Intent, NotRecognized

        if not isinstance(text, str):
            raise BadEvent("recognize needs a text string")
        match = self.services.understanding.match(text)
        if match is None:
            return NotRecognized(text=self.services.not_understood)
        entities = [Entity(name=k, value=_json_value(v)) for k, v in match.slots.items()]
        return Intent(name=match.intent, entities=entities, text=match.response or None)

    async def synthesize(self, text: str) -> None:
        """audio-start, the voice's audio in chunks of CHUNK_SAMPLES, audio-stop; each
        sentence is sent as soon as it is synthesized."""
        from wyoming.audio import AudioChunk, AudioStart, AudioStop

        if not isinstance(text, str) or not text.strip():
            raise BadEvent("synthesize needs a non-empty text")
        voice = self.services.voice
        rate, step = voice.rate_hz, CHUNK_SAMPLES * 2
        sentences = iter(voice.synthesize(text))  # a generator: nothing runs yet
        await self.write(AudioStart(rate=rate, width=2, channels=1))
        while (pcm := await self._locked("tts", next, sentences, None)) is not None:
            for i in range(0, len(pcm), step):
                await self.write(
                    AudioChunk(rate=rate, width=2, channels=1, audio=pcm[i : i + step])
                )
        await self.write(AudioStop())


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


class WyomingServer:
    """Sori's services on a Wyoming address, announced with zeroconf when asked."""

    def __init__(self, services: Services, uri: str, announce_as: str = "") -> None:
        self.services = services
        self.uri = check_uri(uri)
        self.announce_as = announce_as
        """The zeroconf instance name; empty: not announced."""
        self._server: asyncio.AbstractServer | None = None
        self._announcer: Announcer | None = None
        self._connections: set[asyncio.Task] = set()

    async def start(self) -> None:
        parsed = urlparse(self.uri)
        if parsed.scheme == "tcp":
            self._server = await asyncio.start_server(self._client, parsed.hostname, parsed.port)
        else:
            self._server = await asyncio.start_unix_server(self._client, parsed.path)
        log.info("wyoming: serving on %s", self.uri)
        if self.announce_as and parsed.scheme == "tcp":
            self._announcer = Announcer(service_info(self.announce_as, parsed.hostname, self.port))
            await self._announcer.start()

    @property
    def port(self) -> int:
        """The TCP port served (the one the system chose for port 0)."""
        if self._server is None or not self._server.sockets:
            return 0
        return self._server.sockets[0].getsockname()[1]

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        try:
            await SoriHandler(reader, writer, self.services).run()
        finally:
            self._connections.discard(task)

    async def close(self) -> None:
        if self._announcer is not None:
            await self._announcer.close()
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=2)


def service_info(name: str, host: str, port: int) -> Any:
    """The `_wyoming._tcp` record Home Assistant discovers: `name`, at `host`'s address
    (the address the LAN reaches this machine at when `host` is 0.0.0.0) and `port`."""
    from zeroconf.asyncio import AsyncServiceInfo

    address = lan_address() if host in ("0.0.0.0", "", "::") else socket.gethostbyname(host)
    return AsyncServiceInfo(
        SERVICE_TYPE,
        f"{name}.{SERVICE_TYPE}",
        addresses=[socket.inet_aton(address)],
        port=port,
        properties={"version": __version__},
    )


def lan_address() -> str:
    """This machine's address on the network with the default route (no packet is sent:
    connecting a UDP socket only picks the route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("224.0.0.251", 5353))  # mDNS's group: the interface it goes out on
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


class Announcer:
    """A zeroconf registration of the server, removed again on close."""

    def __init__(self, info: Any) -> None:
        self.info = info
        self._zeroconf: Any = None

    async def start(self) -> None:
        try:
            from zeroconf.asyncio import AsyncZeroconf
        except ImportError:
            raise DependencyError(
                "announcing the Wyoming server needs zeroconf: pip install 'sori[wyoming]', "
                "or set [wyoming] zeroconf = false"
            ) from None
        self._zeroconf = AsyncZeroconf()
        await self._zeroconf.async_register_service(self.info)
        log.info("wyoming: announced as %s", self.info.name)

    async def close(self) -> None:
        if self._zeroconf is not None:
            await self._zeroconf.async_unregister_service(self.info)
            await self._zeroconf.async_close()
            self._zeroconf = None


def announce_name(config: Config, zeroconf: bool | None = None) -> str:
    """The zeroconf name to announce under ([wyoming] name, else sori-HOSTNAME); empty when
    zeroconf is off (`zeroconf` overrides [wyoming] zeroconf)."""
    if not (config.wyoming.zeroconf if zeroconf is None else zeroconf):
        return ""
    return config.wyoming.name or f"sori-{socket.gethostname().split('.')[0]}"


def serve(config: Config, home: Home, uri: str, zeroconf: bool | None = None) -> int:
    """`sori wyoming`: load the models, serve on `uri` until SIGTERM or SIGINT."""
    import signal

    check_uri(uri)  # a bad address is refused before any model loads
    require_wyoming()
    services = load_services(config, home)
    server = WyomingServer(services, uri, announce_name(config, zeroconf))

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
    config: Config, home: Home, understanding: Any, voice: Voice
) -> WyomingServer:
    """The Wyoming server `sori run` starts with [wyoming] enabled: the daemon's own
    understanding (so a reload reaches it) and voice; its own recognizer (the microphone's
    is busy hearing the room)."""
    services = await asyncio.to_thread(load_services, config, home, understanding, voice)
    server = WyomingServer(services, config.wyoming.uri, announce_name(config))
    try:
        await server.start()
    except OSError as exc:
        raise ConfigError(
            f"[wyoming] uri {config.wyoming.uri}: cannot serve there ({exc}); pick a free port"
        ) from None
    return server
