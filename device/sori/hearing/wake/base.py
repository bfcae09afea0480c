"""The `WakeDetector` protocol: a stream of 16 kHz s16le PCM in, detections out.

A detector runs on voiced audio only (the pipeline opens a stream when the voice detector
hears an utterance begin, and finishes it when it ends), so it costs nothing in silence;
while Sori speaks, more streams begin within the utterance (`rearm_s`, sori.hearing.wake_gate).
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

    def close(self) -> None:
        """Stop listening and decide nothing more (another stream made the utterance's
        detection, or the microphone was muted); the stream is done."""
        ...


class WakeDetector(Protocol):
    """A loaded wake-phrase detector. Several of its streams may be open at once (while
    Sori speaks, `sori.hearing.wake_gate` starts one every `rearm_s`); each is fed from one
    thread."""

    name: str
    phrases: list[str]
    """The phrases it listens for, as configured."""
    rearm_s: float | None
    """A stream hears only a phrase that begins within this many seconds of its start, so
    for a phrase anywhere in a long utterance a fresh stream must begin this often; None: a
    stream hears all of an utterance."""

    def open_stream(self, within: bool = False) -> WakeStream:
        """A stream for an utterance from its start, or from `within` it (while Sori
        speaks: no pause, no pre-roll before what it hears)."""
        ...

    def warm_up_later(self) -> None:
        """Start warming, on a thread, what the detector builds as it decodes, so that its
        first detection is as quick as later ones (the live microphone's: the first wake
        phrase, the first said over a reply); a detection stops it."""
        ...

    def heard_in(self, phrase: str, pcm: bytes, heard_score: float) -> bool:
        """Whether `phrase` is heard in `pcm` alone, about as surely as in the microphone's
        audio (where its detection scored `heard_score`): `pcm` is what Sori's speaker was
        playing while the phrase was detected (found there, it was Sori's own voice)."""
        ...
