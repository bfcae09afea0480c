"""`detect`: wake phrases in a satellite's microphone stream, which runs for minutes.

A wake detector hears the start of an utterance (`sori.hearing.wake`), so the stream goes
through the voice detector first, as `sori run` hears its own microphone: each utterance's
start is offered to the detector, and a phrase said a minute into the stream is heard as
well as one at its start.
"""

from __future__ import annotations

from collections.abc import Iterable

from sori.core.events import WakeDetected
from sori.hearing.audio.format import AudioFrame
from sori.hearing.audio.ring import FrameChunker
from sori.hearing.pipeline import Hearing


class WakeListening:
    """One `detect` request: 16 kHz mono s16le in, the wake phrases heard out."""

    def __init__(self, hearing: Hearing, frame_ms: int) -> None:
        self._hearing = hearing
        self._chunker = FrameChunker(frame_ms)

    def feed(self, pcm: bytes) -> list[WakeDetected]:
        return self._heard(self._chunker.push(pcm))

    def finish(self) -> list[WakeDetected]:
        """The stream ended: phrases still pending."""
        heard = self._heard(self._chunker.flush())
        return heard + [e for e in self._hearing.end() if isinstance(e, WakeDetected)]

    def _heard(self, frames: Iterable[AudioFrame]) -> list[WakeDetected]:
        return [
            event
            for frame in frames
            for event in self._hearing.push(frame)
            if isinstance(event, WakeDetected)
        ]
