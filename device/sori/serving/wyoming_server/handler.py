"""One Wyoming connection: events in, answers out, until the client leaves."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from sori.core.errors import AudioError
from sori.hearing.stt.tokens import spoken_text
from sori.serving.conversation.meaning import answered, asks, understood
from sori.serving.wyoming_server.services import Services, describe
from sori.serving.wyoming_server.transcribing import Transcribing
from sori.serving.wyoming_server.wire import (
    DEFAULT_LIMITS,
    AudioIn,
    BadEvent,
    Hangup,
    Limits,
    check_fields,
    read_event,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

CHUNK_SAMPLES = 1024
"""Samples per synthesized audio-chunk event (what Wyoming's own voices send)."""


def _json_value(value: Any) -> Any:
    """A slot value as JSON can carry it (numbers, text, lists); anything else as text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


def _entities(slots: dict[str, Any]) -> list[Any]:
    from wyoming.intent import Entity

    return [Entity(name=k, value=_json_value(v)) for k, v in slots.items()]


AUDIO_STREAM = ("audio-start", "audio-chunk", "audio-stop")
"""The events of one audio stream: after one is refused, the rest go unanswered."""


class SoriHandler:
    """One client connection: events in, answers out, until the client leaves. An event
    that cannot be read or served gets an `error` event; the connection carries on. A
    connection that cannot (silent too long, an event that never comes whole) is told
    why and closed."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        services: Services,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.services = services
        self.limits = limits
        self.mode = ""
        """What the current audio is for: "transcribe", "detect" or "" (none asked)."""
        self.audio: AudioIn | None = None
        self.stream: Any = None
        self.heard: list[str] = []
        self.refused = False
        """The current audio stream was refused and its error sent: its other chunks and
        its stop are dropped unanswered (one error, not one per chunk)."""

    async def run(self) -> None:
        try:
            while True:
                try:
                    event = await read_event(
                        self.reader, self._idle_timeout_s(), self.limits.event_timeout_s
                    )
                except BadEvent as exc:
                    await self.error(str(exc), "bad-event")
                    continue
                if event is None:
                    break
                if not self._dropped(event):
                    await self._serve(event)
        except Hangup as exc:
            with contextlib.suppress(ConnectionError):
                await self.error(str(exc), exc.code)
        except ConnectionError as exc:
            log.info("wyoming: client left: %s", exc)
        finally:
            self._reset()
            if self.services.satellite is not None:
                self.services.satellite.pause(self)
            self.writer.close()

    async def _serve(self, event: Any) -> None:
        """One event served; one that cannot be gets an error event."""
        try:
            check_fields(event)
            await self.handle(event)
        except (BadEvent, AudioError, TypeError, ValueError) as exc:
            self._reset(refused=event.type in AUDIO_STREAM)
            await self.error(f"{event.type}: {exc}", "bad-event")
        except ConnectionError:
            raise
        except Exception as exc:  # a failure serving one request, not the server
            log.exception("wyoming: %s failed", event.type)
            self._reset()
            await self.error(f"{event.type} failed: {exc}", "failed")

    def _idle_timeout_s(self) -> float | None:
        """No limit for the satellite's connection: Home Assistant holds it open for as
        long as the satellite runs (and pings it)."""
        link = self.services.satellite
        return None if link is not None and link.peer is self else self.limits.idle_timeout_s

    def _dropped(self, event: Any) -> bool:
        """Whether `event` is the rest of a refused audio stream, dropped unanswered."""
        if not self.refused or event.type not in AUDIO_STREAM[1:]:
            return False
        self.refused = event.type != "audio-stop"
        return True

    async def write(self, eventable: Any) -> None:
        """Send one event; a client that reads none of it for idle_timeout_s is dropped
        (ConnectionError), so it cannot hold its connection open by not reading."""
        from wyoming.event import async_write_event

        try:
            await asyncio.wait_for(
                async_write_event(eventable.event(), self.writer), self.limits.idle_timeout_s
            )
        except TimeoutError:
            self.writer.transport.abort()  # what is still buffered will never be read
            raise ConnectionError(
                f"the client read no answer for {self.limits.idle_timeout_s:g} s"
            ) from None

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

        if await self._satellite(event):
            return
        if Describe.is_type(event.type):
            await self.write(describe(self.services))
        elif Transcribe.is_type(event.type):
            self._reset()
            self.mode, language = "transcribe", Transcribe.from_event(event).language
            if language and language.split("-")[0] != self.services.language:
                log.warning("wyoming: asked to transcribe %s; Sori hears %s only", language,
                            self.services.language)  # fmt: skip
        elif Detect.is_type(event.type):
            if self.services.detector is None:
                raise BadEvent("no wake phrases are configured here ([wake] in sori.toml)")
            self._reset()
            self.mode = "detect"
        elif AudioStart.is_type(event.type):
            start = AudioStart.from_event(event)
            self.refused = False  # a new stream
            self.mode = self.mode or "transcribe"  # audio alone is a transcription
            endless = self.mode == "detect"  # a satellite listens for as long as it runs
            self.audio = AudioIn(
                start.rate, start.width, start.channels, endless, self.limits.max_audio_bytes
            )
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
            for answer in await self.recognize(Recognize.from_event(event).text):
                await self.write(answer)
        elif Synthesize.is_type(event.type):
            await self.synthesize(Synthesize.from_event(event).text)
        elif Ping.is_type(event.type):
            await self.write(Pong(text=event.data.get("text")))
        elif SelectProgram.is_type(event.type):
            pass  # one program per kind: whichever is named, it is that one
        else:
            # Wyoming peers ignore events they do not know (newer clients send more kinds)
            log.debug("wyoming: ignored an event of type %r", event.type)

    async def _satellite(self, event: Any) -> bool:
        """run-satellite, pause-satellite, and Home Assistant's answers on the satellite's
        connection (`sori.serving.wyoming_server.satellite`); False for any other event."""
        from wyoming.satellite import PauseSatellite, RunSatellite

        link = self.services.satellite
        if RunSatellite.is_type(event.type) or PauseSatellite.is_type(event.type):
            if link is None:
                raise BadEvent(
                    "Sori is not a satellite here: set [wyoming] satellite = true and run "
                    "`sori run` (it needs the microphone)"
                )
            link.run(self) if RunSatellite.is_type(event.type) else link.pause(self)
            return True
        return link is not None and link.peer is self and await link.on_event(self, event)

    async def _locked(self, name: str, work: Callable[..., T], *args: Any) -> T:
        lock = self.services.locks[name]

        def locked() -> T:
            with lock:
                return work(*args)

        return await asyncio.to_thread(locked)

    async def _open(self) -> None:
        if self.mode == "detect":
            self.stream = await self._locked("wake", self.services.listen_for_wake)
        elif self.services.transcribing is not None:  # as `sori replay` hears a file
            self.stream = self.services.transcribing(self.services.locks["stt"])
        else:
            self.stream = await self._locked("stt", self.services.recognizer.open_stream)
        self.heard = []

    async def _feed(self, frames: list[bytes]) -> None:
        if not frames:
            return
        stream = self.stream
        if isinstance(stream, Transcribing):  # heard on its own worker as it arrives
            for frame in frames:
                stream.feed(frame)
            return

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
        self.stream = None  # finished here, not abandoned by the reset
        self._reset()
        if mode == "detect":
            await self._detected([d.phrase for d in await self._locked("wake", stream.finish)])
            if not self.heard:
                await self.write(NotDetected())
            return
        if isinstance(stream, Transcribing):  # its worker takes the lock frame by frame
            final = await asyncio.to_thread(stream.finalize)
        else:
            final = await self._locked("stt", stream.finalize)
        text = final if isinstance(final, str) else spoken_text(final.text)
        log.info("wyoming: transcribed %r", text)
        await self.write(Transcript(text=text, language=self.services.language))

    def _reset(self, refused: bool = False) -> None:
        if isinstance(self.stream, Transcribing):  # its worker ends with the stream
            self.stream.close()
        self.mode, self.audio, self.stream = "", None, None
        self.refused = refused

    async def recognize(self, text: str) -> list[Any]:
        """`intent` with the Home Assistant intent name and slots as entities; a sentence
        of several commands as `intents-start`, one `intent` per command (its own name,
        entities and reply), `intents-stop`; or `not-recognized` with Sori's reply. A
        question is answered from the home's state, as the daemon answers it."""
        from wyoming.intent import Intent, IntentsStart, IntentsStop, NotRecognized

        if not isinstance(text, str):
            raise BadEvent("recognize needs a text string")
        found = understood(self.services.understanding, text)  # as `sori intent`, `/say`
        if asks(found) and self.services.answerer is not None:
            found = await answered(found, self.services.answerer)
        if found["intent"] is None:
            return [NotRecognized(text=found["response"] or self.services.not_understood)]
        parts = found["slots"].get("parts")
        if not parts:
            return [Intent(name=found["intent"], entities=_entities(found["slots"]),
                           text=found["response"] or None)]  # fmt: skip
        each = [
            Intent(name=part["intent"], entities=_entities(part["slots"]), text=said or None)
            for part, said in zip(parts, found["replies"], strict=True)
        ]  # fmt: skip
        return [IntentsStart(), *each, IntentsStop()]

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
