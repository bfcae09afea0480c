"""Sori as a Home Assistant voice satellite: Wyoming's satellite events on the server.

Home Assistant's wyoming integration connects, asks `describe` (the `info` lists a
`satellite`), then sends `run-satellite`: from then until `pause-satellite` or it leaves,
that connection is the satellite's link. Sori keeps hearing the room itself (wake phrase,
voice detector, recognizer, presets): a command a preset matches is acted on here, at
once, and Home Assistant never hears of it. An utterance no preset matches is handed over:

    Sori → HA   run-pipeline (start_stage asr, end_stage tts, the wake phrase that opened it)
    Sori → HA   audio-start, audio-chunk..., audio-stop   (the utterance, 16 kHz mono)
    HA → Sori   transcript, synthesize (the reply's text), audio-start, audio-chunk...,
                audio-stop (the reply, played through Sori's player), or error
    Sori → HA   played (the reply has been played)

The utterance is sent once it has ended (the presets decide on the whole of it), so Home
Assistant's pipeline starts after the user stopped speaking rather than while they speak,
as a satellite streaming live would.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from sori.core.config import Config
from sori.core.events import Event, IntentNotRecognized, SpeechStarted, SpeechStopped, WakeDetected
from sori.hearing.audio.format import RATE_HZ, AudioFrame
from sori.serving.wyoming_server.wire import check_format

log = logging.getLogger(__name__)

KEEP_S = 30.0
"""Seconds of heard audio kept for a hand-over: longer than any utterance ([vad]
max_utterance_s is at most this in practice; a longer one is handed over cut)."""

MARGIN_MS = 300
"""Audio sent before the first voiced frame and after the last, in milliseconds: the voice
detector's onset and release are not exact, and Home Assistant's recognizer wants the
word edges whole."""

CHUNK_SAMPLES = 1024
"""Samples per audio-chunk event sent to Home Assistant."""

MAX_REPLY_S = 300
"""Longest reply audio taken from Home Assistant, in seconds; more is refused."""


class AudioTap:
    """Frames heard, passed on unchanged, the last `keep_s` seconds kept: an utterance no
    preset matched can then be sent to Home Assistant after it ended."""

    def __init__(self, keep_s: float = KEEP_S) -> None:
        self.keep_ns = int(keep_s * 1e9)
        self._frames: deque[AudioFrame] = deque()
        self._lock = threading.Lock()  # frames arrive on the hearing thread
        self.origin_ns = 0
        """Clock time of the stream's start: hearing events' times minus it are stream times."""

    def __call__(self, frames: Iterable[AudioFrame], origin_ns: int = 0) -> Iterator[AudioFrame]:
        """Pass `frames` on, keeping them; `origin_ns` is the clock time of stream time 0
        (the hearing events' times count from it)."""
        self.origin_ns = origin_ns
        for frame in frames:
            with self._lock:
                self._frames.append(frame)
                while self._frames[0].start_ns < frame.start_ns - self.keep_ns:
                    self._frames.popleft()
            yield frame

    def clip(self, start_ns: int, end_ns: int) -> bytes:
        """The kept audio between clock times `start_ns` and `end_ns`, as hearing events
        give them (16 kHz s16le)."""
        start_ns, end_ns = start_ns - self.origin_ns, end_ns - self.origin_ns
        with self._lock:
            return b"".join(
                f.pcm for f in self._frames
                if f.start_ns + f.duration_ns > start_ns and f.start_ns < end_ns
            )  # fmt: skip


class SatelliteLink:
    """The satellite's side of Home Assistant's link: which connection runs the
    satellite, the utterances handed to it, and its replies played."""

    def __init__(self, player: Any, name: str, area: str = "", phrases: Iterable[str] = ()) -> None:
        self.player = player
        """Plays Home Assistant's replies (`sori.speaking.playback.Player`)."""
        self.name = name
        self.area = area
        self.phrases = list(phrases)
        """The wake phrases Sori listens for, as the info lists them."""
        self.tap = AudioTap()
        self.peer: Any = None
        """The connection (`SoriHandler`) that sent run-satellite; None: not running."""
        self.handed_over = 0
        """Utterances sent to Home Assistant so far."""
        self._heard: dict[int, list[int]] = {}
        """Stream times (ns) where each recent utterance's speech began and ended."""
        self._wake: str | None = None
        self._reply: bytearray | None = None
        self._reply_rate = RATE_HZ
        self._reply_text = ""
        self._turn = 0
        self._tasks: set[asyncio.Task] = set()

    @property
    def running(self) -> bool:
        return self.peer is not None

    # -- Home Assistant's connection ---------------------------------------------------------

    def run(self, peer: Any) -> None:
        """run-satellite: utterances Sori does not understand go to this connection."""
        if self.peer is not None and self.peer is not peer:
            log.info("satellite: a new Home Assistant connection takes over the satellite")
        self.peer = peer
        log.info("satellite: running (Home Assistant's pipeline takes what Sori does not)")

    def pause(self, peer: Any) -> None:
        """pause-satellite, or the connection left: Sori keeps everything to itself."""
        if self.peer is peer:
            self.peer = None
            self._reply = None
            log.info("satellite: paused")

    async def on_event(self, peer: Any, event: Any) -> bool:
        """An event from the satellite's connection; False when it is not one of the
        pipeline's answers (the server handles it as any other)."""
        from wyoming.asr import Transcript
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.error import Error
        from wyoming.tts import Synthesize

        if Transcript.is_type(event.type):
            log.info("satellite: Home Assistant heard %r", Transcript.from_event(event).text)
        elif Synthesize.is_type(event.type):
            self._reply_text = Synthesize.from_event(event).text
            log.info("satellite: Home Assistant answers %r", self._reply_text)
        elif AudioStart.is_type(event.type):
            start = AudioStart.from_event(event)
            check_format(start.rate, start.width, start.channels)
            _check_format(start.width, start.channels)
            self._reply, self._reply_rate = bytearray(), start.rate
        elif AudioChunk.is_type(event.type):
            chunk = AudioChunk.from_event(event)
            if self._reply is None:
                raise ValueError("audio-chunk before audio-start")
            _check_format(chunk.width, chunk.channels)
            if len(self._reply) + len(chunk.audio) > MAX_REPLY_S * self._reply_rate * 2:
                self._reply = None
                raise ValueError(f"a reply longer than {MAX_REPLY_S} s; not played")
            self._reply += chunk.audio
        elif AudioStop.is_type(event.type):
            if self._reply is None:
                raise ValueError("audio-stop before audio-start")
            pcm, self._reply = bytes(self._reply), None
            self._spawn(self._play(peer, pcm, self._reply_rate, self._reply_text))
            self._reply_text = ""
        elif Error.is_type(event.type):
            error = Error.from_event(event)
            log.warning("satellite: Home Assistant's pipeline failed: %s (%s)", error.text,
                        error.code)  # fmt: skip
        elif event.type in ("voice-started", "voice-stopped", "detection", "transcript-chunk",
                            "transcript-start", "transcript-stop"):  # fmt: skip
            log.debug("satellite: %s from Home Assistant", event.type)
        else:
            return False
        return True

    async def _play(self, peer: Any, pcm: bytes, rate_hz: int, text: str) -> None:
        from wyoming.snd import Played

        spoken = await self.player.play(pcm, rate_hz, self._turn, text)
        log.info("satellite: played Home Assistant's reply (%.1f s)", spoken.audio_ns / 1e9)
        if self.peer is peer:
            await peer.write(Played())

    # -- the daemon's side -------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        """Every daemon event (a `Daemon.listeners` entry): utterances heard, wake phrases."""
        if isinstance(event, SpeechStarted):
            self._heard[event.utterance_id] = [event.audio_start_ns, event.audio_start_ns]
            while len(self._heard) > 32:
                self._heard.pop(next(iter(self._heard)))
        elif isinstance(event, SpeechStopped) and event.utterance_id in self._heard:
            self._heard[event.utterance_id][1] = event.audio_end_ns
        elif isinstance(event, WakeDetected):
            self._wake = event.phrase

    def hand_over(self, event: IntentNotRecognized) -> bool:
        """An utterance no preset matched: sent to Home Assistant's pipeline when the
        satellite runs (True), else left to Sori (False)."""
        heard = self._heard.pop(event.utterance_id, None)
        peer = self.peer
        if peer is None or heard is None:
            return False
        margin = MARGIN_MS * 1_000_000
        pcm = self.tap.clip(heard[0] - margin, heard[1] + margin)
        if not pcm:
            log.warning("satellite: no audio kept of utterance %d", event.utterance_id)
            return False
        self._turn = event.utterance_id
        self.handed_over += 1
        log.info(
            "satellite: %r is not a command here; %.1f s of audio to Home Assistant",
            event.text, len(pcm) / 2 / RATE_HZ,
        )  # fmt: skip
        self._spawn(self._send(peer, pcm, self._wake))
        self._wake = None
        return True

    async def _send(self, peer: Any, pcm: bytes, wake: str | None) -> None:
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.pipeline import PipelineStage, RunPipeline

        await peer.write(RunPipeline(PipelineStage.ASR, PipelineStage.TTS, wake_word_name=wake))
        await peer.write(AudioStart(rate=RATE_HZ, width=2, channels=1))
        step = CHUNK_SAMPLES * 2
        for i in range(0, len(pcm), step):
            await peer.write(AudioChunk(rate=RATE_HZ, width=2, channels=1, audio=pcm[i : i + step]))
        await peer.write(AudioStop())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("satellite: %s", task.exception())

    def info(self) -> Any:
        """The `satellite` entry of the server's info."""
        from wyoming.info import Attribution, Satellite

        from sori import __version__
        from sori.serving.wyoming_server.services import ATTRIBUTION

        return Satellite(
            name=self.name,
            attribution=Attribution(*ATTRIBUTION),
            installed=True,
            description="Sori: local commands at once, the rest to Home Assistant's pipeline",
            version=__version__,
            area=self.area or None,
            has_vad=True,
            active_wake_words=self.phrases,
            max_active_wake_words=len(self.phrases),
            supports_trigger=False,
        )


def _check_format(width: int, channels: int) -> None:
    if (width, channels) != (2, 1):
        raise ValueError(
            f"reply audio {width} B/{channels} ch: Sori plays 16-bit mono (width 2, channels 1)"
        )


def attach_satellite(config: Config, daemon: Any, name: str) -> SatelliteLink:
    """The satellite link of `sori run` with [wyoming] satellite: the daemon hands it the
    utterances no preset matched and its events; replies play through its player."""
    phrases = config.wake.phrases if config.wake.enabled else []
    link = SatelliteLink(daemon.player, name, config.home.area, phrases)
    daemon.listeners.append(link.observe)
    daemon.hand_over = link.hand_over
    return link
