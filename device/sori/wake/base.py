"""The `WakeDetector` protocol: a stream of 16 kHz s16le PCM in, detections out.

A detector runs on voiced audio only (the pipeline opens a stream when the voice detector
hears an utterance begin, and finishes it when it ends), so it costs nothing in silence.
Times are seconds from the start of the stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

RATE_HZ = 16_000
BYTES_PER_S = 2 * RATE_HZ
"""16 kHz mono s16le."""


@dataclass(frozen=True, slots=True)
class Detection:
    """One wake phrase heard in a stream."""

    phrase: str
    """The configured phrase that was heard, as written in `[wake] phrases`."""
    start_s: float
    """Where it begins, in seconds from the start of the stream."""
    end_s: float
    """Where it ends, in seconds from the start of the stream."""
    score: float
    """The detector's decision score (phrase backend: likelihood ratio per second)."""


class WakeStream(Protocol):
    """One utterance through a detector."""

    @property
    def done(self) -> bool:
        """It hears no more of the utterance (its detection made, or the part it listens
        to is over): what is fed to it now is ignored."""
        ...

    def feed(self, pcm: bytes) -> list[Detection]:
        """Decode `pcm` (16 kHz mono s16le); the detections it completed, in order."""
        ...

    def finish(self) -> list[Detection]:
        """No more audio: detections still pending; the stream is done."""
        ...


class WakeDetector(Protocol):
    """A loaded wake-phrase detector; streams are opened one at a time."""

    name: str
    phrases: list[str]
    """The phrases it listens for, as configured."""

    def open_stream(self) -> WakeStream: ...
