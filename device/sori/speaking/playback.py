"""Speaking a reply: the voice (or the fixed-reply cache) into a sink, sentence by sentence.

One reply plays at a time, in the order asked. Barge-in: `interrupt()` stops what is
playing and drops replies still waiting, so the user's new turn is heard and answered.
The first sentence plays while later ones are still being synthesized on a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from sori.core.clock import Clock
from sori.core.events import Event, PlaybackStarted, PlaybackStopped
from sori.hearing.audio.format import float_to_s16, s16_to_float
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.audio.sinks import Sink
from sori.speaking.cache import ReplyCache
from sori.speaking.earcon import earcon

log = logging.getLogger(__name__)

DUCK_DB = 20.0
"""How much quieter a reply plays while a wake phrase heard over it is checked (`duck`):
the user hears Sori yield at once, and the microphone hears less of Sori over their
command, without stopping a reply for what may be Sori's own voice."""


@dataclass(frozen=True, slots=True)
class Spoken:
    """How saying one reply went."""

    text: str
    """What was said."""
    first_audio_ns: int | None
    """Clock time the first audio reached the sink; None when nothing played."""
    cached: bool
    """The audio came from the fixed-reply cache."""
    interrupted: bool
    """Barge-in or shutdown cut it off (or it never started)."""
    audio_ns: int
    """Length of the audio played, in nanoseconds."""
    error: str = ""
    """Why synthesis failed, if it did."""


class Player:
    """Plays replies into a sink, one at a time, stoppable."""

    def __init__(
        self,
        sink: Sink,
        cache: ReplyCache,
        clock: Clock,
        emit: Callable[[Event], None] = lambda event: None,
        piece_ms: int = 40,
    ) -> None:
        self.sink = sink
        self.cache = cache
        self.clock = clock
        self.emit = emit
        self.piece_ms = piece_ms
        """Audio is handed to the sink in pieces this long, so a stop takes effect fast."""
        self.played: PlayedAudio | None = None
        """Where to record what a speaker sink plays, and when, for a microphone that hears
        it back (set by the daemon's builder when one listens); None: not recorded."""
        self._lock = asyncio.Lock()
        self._epoch = 0
        self._playing = False
        self._gain = 1.0
        """What the reply playing is scaled by: below 1 while ducked (`duck`)."""

    @property
    def playing(self) -> bool:
        return self._playing

    def duck(self) -> bool:
        """Play the rest of the reply `DUCK_DB` quieter, from the next piece, until
        `unduck` or its end: a wake phrase heard over it is being checked. True when one
        was playing."""
        if self._playing:
            self._gain = 10 ** (-DUCK_DB / 20)
        return self._playing

    def unduck(self) -> None:
        """Back to full level: what was heard over the reply was not for Sori."""
        self._gain = 1.0

    def interrupt(self) -> bool:
        """Stop the reply playing now and drop those waiting; True when one was playing."""
        was_playing = self._playing
        self._epoch += 1
        self._gain = 1.0
        if was_playing:
            self.sink.stop()
        return was_playing

    async def say(self, text: str, utterance_id: int = 0, tone: str = "") -> Spoken:
        """Say `text` (after the earcon `tone`, if any); returns once it has played."""
        return await self._in_turn(text, lambda epoch: self._play(text, utterance_id, tone, epoch))

    async def play(self, pcm: bytes, rate_hz: int, utterance_id: int = 0, text: str = "") -> Spoken:
        """Play audio made elsewhere (16-bit mono at `rate_hz`: Home Assistant's reply to a
        satellite) in its turn, stoppable like a reply; `text` is what it says, if known."""
        return await self._in_turn(
            text, lambda epoch: self._play_pcm(pcm, rate_hz, utterance_id, text, epoch)
        )

    async def _in_turn(self, text: str, playing: Callable[[int], Awaitable[Spoken]]) -> Spoken:
        """Run `playing` (given the epoch it plays in) once the replies before it are done,
        as the one playing; one interrupted while it waited is dropped unplayed."""
        epoch = self._epoch
        async with self._lock:
            if epoch != self._epoch:
                return Spoken(text, None, False, True, 0)
            self._playing = True
            try:
                return await playing(epoch)
            finally:
                self._playing = False
                self._gain = 1.0  # a duck lasts one reply

    async def _play_pcm(
        self, pcm: bytes, rate_hz: int, utterance_id: int, text: str, epoch: int
    ) -> Spoken:
        first, samples = await self._write(pcm, rate_hz, epoch)
        if first is not None:
            self.emit(PlaybackStarted(first, utterance_id, text, False))
        played_ns = samples * 1_000_000_000 // rate_hz
        interrupted = epoch != self._epoch
        self.emit(PlaybackStopped(self.clock.now_ns(), utterance_id, interrupted, played_ns))
        return Spoken(text, first, False, interrupted, played_ns)

    async def _play(self, text: str, utterance_id: int, tone: str, epoch: int) -> Spoken:
        rate_hz = self.cache.rate_hz
        cached = self.cache.get(text)
        first_ns: int | None = None
        played_ns = 0
        error = ""
        chunks = self._chunks(text, cached, epoch)
        pieces = [earcon(tone, rate_hz)] if tone else []
        try:
            while True:
                pcm = pieces.pop(0) if pieces else await anext(chunks, None)
                if pcm is None or epoch != self._epoch:
                    break
                rate_hz = self.cache.rate_hz  # espeak-ng reports its rate once it has run
                t, n = await self._write(pcm, rate_hz, epoch)
                if first_ns is None and t is not None:
                    first_ns = t
                    self.emit(PlaybackStarted(t, utterance_id, text, cached is not None))
                played_ns += n * 1_000_000_000 // rate_hz
        except Exception as exc:  # a voice failing must not end the daemon
            error = f"speech failed: {exc}"
            log.error("saying %r: %s", text, exc)
        finally:
            await chunks.aclose()
        interrupted = epoch != self._epoch
        self.emit(PlaybackStopped(self.clock.now_ns(), utterance_id, interrupted, played_ns))
        return Spoken(text, first_ns, cached is not None, interrupted, played_ns, error)

    async def _chunks(self, text: str, cached, epoch: int):  # noqa: ANN001, ANN202
        if cached is not None:
            for pcm in cached:
                yield pcm
            return
        if not text.strip():
            return
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        done = object()

        def produce() -> None:
            try:
                for pcm in self.cache.synthesize(text):
                    loop.call_soon_threadsafe(queue.put_nowait, pcm)
                    if epoch != self._epoch:
                        break
            except Exception as exc:  # handed to the consumer
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, done)

        worker = asyncio.ensure_future(asyncio.to_thread(produce))
        try:
            while (item := await queue.get()) is not done:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            await worker

    async def _write(self, pcm: bytes, rate_hz: int, epoch: int) -> tuple[int | None, int]:
        """Hand `pcm` to the sink piece by piece, until stopped: the clock time of the first
        piece (None if none went) and how many samples went."""
        step = max(2, rate_hz * self.piece_ms // 1000 * 2)
        first: int | None = None
        written = 0
        for piece in _pieces(pcm, step):
            if epoch != self._epoch:
                break
            now = self.clock.now_ns()
            if first is None:
                first = now
            if self._gain != 1.0:
                piece = float_to_s16(s16_to_float(piece) * self._gain)
            if self.sink.realtime:
                if self.played is not None:
                    self.played.add(now, piece, rate_hz)
                await asyncio.to_thread(self.sink.write, piece, rate_hz)
            else:
                self.sink.write(piece, rate_hz)
            written += len(piece) // 2
        return first, written


def _pieces(pcm: bytes, step: int) -> Iterator[bytes]:
    for i in range(0, len(pcm), step):
        yield pcm[i : i + step]
