"""`transcribe`: a client's audio heard as `sori replay` hears a file.

The stream goes through a fresh hearing pipeline built by `sori.assemble.hearing` (the
room's front end, the voice detector, both recognizer passes and their choice, the
transcript's cleanup) on a simulated clock, so a clip sent here and the same clip given
to `sori replay` come back as the same words. It is heard while it arrives, on a worker
thread, so the transcript is ready soon after the client's audio-stop instead of a whole
clip's decoding later.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterator
from typing import Any

from sori.assemble.hearing import build_hearing, front_end
from sori.core.config import Config
from sori.core.events import Event, UtteranceHeard
from sori.hearing.audio.format import AudioFrame
from sori.hearing.audio.ring import FrameChunker
from sori.hearing.pacing import ReplayClock


class Transcribing:
    """One `transcribe` request: 16 kHz mono s16le in (`feed`, which never blocks), the
    transcript out (`finalize`). `lock` is the server's speech-to-text lock: the worker
    holds it for each frame it hears, so connections share the recognizer in turn."""

    def __init__(
        self, config: Config, recognizer: Any, understanding: Any, lock: threading.Lock
    ) -> None:
        self._chunker = FrameChunker(config.audio.frame_ms)
        self._arrived: queue.SimpleQueue[AudioFrame | None] = queue.SimpleQueue()
        self._ended = False
        self._said: list[str] = []
        self._failed: BaseException | None = None
        self._worker = threading.Thread(
            target=self._hear,
            args=(config, recognizer, understanding, lock),
            name="wyoming-transcribe",
            daemon=True,
        )
        self._worker.start()

    def feed(self, pcm: bytes) -> None:
        for frame in self._chunker.push(pcm):
            self._arrived.put(frame)

    def finalize(self) -> str:
        """The words of every utterance heard, in order, as `sori replay` prints them
        (blocks until the worker has heard the last frame)."""
        for frame in self._chunker.flush():
            self._arrived.put(frame)
        self.close()
        self._worker.join()
        if self._failed is not None:
            raise self._failed
        return " ".join(self._said)

    def close(self) -> None:
        """No more audio comes (a finished, refused or abandoned stream): the worker hears
        what it has and ends."""
        if not self._ended:
            self._ended = True
            self._arrived.put(None)

    def _frames(self) -> Iterator[AudioFrame]:
        while (frame := self._arrived.get()) is not None:
            yield frame

    def _hear(self, config: Config, recognizer: Any, understanding: Any, lock: Any) -> None:
        try:
            frames = self._frames()
            first = next(frames, None)
            if first is None:  # nothing came (a refused stream): no pipeline is built
                return
            clock = ReplayClock()
            with lock:
                hearing = build_hearing(config, recognizer, understanding, clock)
            for frame in front_end(config, itertools.chain([first], frames)):
                clock.arrive(hearing.origin_ns + frame.end_ns)  # as sori.hearing.pacing.replay
                with lock:
                    self._keep(hearing.push(frame))
            with lock:
                self._keep(hearing.end())
        except BaseException as exc:  # handed to finalize, which the handler answers
            self._failed = exc

    def _keep(self, events: list[Event]) -> None:
        self._said += [e.text for e in events if isinstance(e, UtteranceHeard) and e.text.strip()]
