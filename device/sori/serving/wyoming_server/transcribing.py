"""`transcribe`: a client's audio heard as `sori replay` hears a file.

The stream goes through a fresh hearing pipeline built by `sori.assemble.hearing` (the
room's front end, the voice detector, both recognizer passes and their choice, the
transcript's cleanup) on a simulated clock, so a clip sent here and the same clip given
to `sori replay` come back as the same words.
"""

from __future__ import annotations

from typing import Any

from sori.assemble.hearing import build_hearing, front_end
from sori.core.config import Config
from sori.core.events import UtteranceHeard
from sori.hearing.audio.format import AudioFrame
from sori.hearing.audio.ring import FrameChunker
from sori.hearing.pacing import ReplayClock, replay


class Transcribing:
    """One `transcribe` request: 16 kHz mono s16le in, the transcript out."""

    def __init__(self, config: Config, recognizer: Any, understanding: Any) -> None:
        self._config = config
        self._recognizer = recognizer
        self._understanding = understanding
        self._chunker = FrameChunker(config.audio.frame_ms)
        self._frames: list[AudioFrame] = []

    def feed(self, pcm: bytes) -> None:
        self._frames += self._chunker.push(pcm)

    def finalize(self) -> str:
        """The words of every utterance heard, in order, as `sori replay` prints them."""
        self._frames += self._chunker.flush()
        clock = ReplayClock()
        hearing = build_hearing(self._config, self._recognizer, self._understanding, clock)
        events = replay(front_end(self._config, self._frames), hearing, clock)
        said = [e.text for e in events if isinstance(e, UtteranceHeard) and e.text.strip()]
        return " ".join(said)
