"""Which utterances the recognizer hears: mute, and the wake phrase.

Turn logic between the voice detector and the recognizer (floor 3); the hearing pipeline
(`sori.pipeline.Hearing`) asks it at each utterance. The gate (`Gate`, such as
`sori.conversation.listening.Conversation`) says whether audio is heard at all (muted:
nothing is) and whether an utterance that begins now is a command without a wake phrase
(a listening or follow-up window is open). With a wake detector as well, every utterance
also goes through the detector; the phrase it finds opens the utterance, and the audio
after the phrase is handed back for the recognizer, so "소리야 불 켜줘" is understood as
"불 켜줘".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from sori.audio.format import AudioFrame
from sori.clock import Clock
from sori.events import WakeDetected
from sori.wake.base import Detection, WakeDetector, WakeStream

MAX_WAKE_FRAMES = 500
"""Frames of an utterance kept for the command after a wake phrase (10 s of 20 ms)."""


class Gate(Protocol):
    """Who is listened to (`sori.conversation.listening.Conversation`): whether audio reaches the
    recognizer at all, and whether an utterance is a command without a wake phrase."""

    muted: bool

    def is_open(self, t_ns: int) -> bool:
        """Whether an utterance beginning at stream time `t_ns` (clock-comparable) is
        heard as a command without a wake phrase."""
        ...


class NeverOpen:
    """A gate that hears commands only after a wake phrase (`sori wake`, benchmarks)."""

    muted = False

    def is_open(self, t_ns: int) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Woken:
    """A wake phrase found inside an utterance."""

    event: WakeDetected
    """The detection, in clock-comparable stream times."""
    after: list[AudioFrame]
    """The utterance's frames so far that end after the phrase: the command's start."""


@dataclass
class _Utterance:
    """Bookkeeping of one utterance heard by the wake detector."""

    utterance_id: int
    stream: WakeStream
    first_ns: int
    """Stream time of its first frame (the pre-roll's), without the origin."""
    frames: list[AudioFrame] = field(default_factory=list)
    """Its frames so far (up to `MAX_WAKE_FRAMES`): the command after a wake phrase is fed
    from here."""


class WakeGate:
    """Mute and the wake phrase for one hearing stream (see the module docstring).

    Without a gate nothing is muted and every utterance is heard; without a detector the
    gate only mutes, and every utterance is heard too."""

    def __init__(
        self, gate: Gate | None, detector: WakeDetector | None, clock: Clock, origin_ns: int = 0
    ) -> None:
        self.gate = gate
        self.detector = detector
        self.clock = clock
        self.origin_ns = origin_ns
        """Clock time of stream time 0; detection times are shifted by it."""
        self.busy_ns = 0
        """Processing time spent in the wake detector, in nanoseconds."""
        self._utt: _Utterance | None = None

    @property
    def muted(self) -> bool:
        return self.gate is not None and self.gate.muted

    @property
    def gated(self) -> bool:
        """Utterances need the wake phrase or an open window."""
        return self.detector is not None and self.gate is not None

    @property
    def listening(self) -> bool:
        """An utterance is open with the detector."""
        return self._utt is not None

    def hears(self, audio_start_ns: int) -> bool:
        """Whether the recognizer hears an utterance beginning at `audio_start_ns` from its
        start (ungated, or a window is open then)."""
        return not self.gated or self.gate.is_open(audio_start_ns)  # type: ignore[union-attr]

    def begin(self, utterance_id: int, first: AudioFrame) -> None:
        """An utterance began with frame `first` (the pre-roll's): the detector hears it
        (feed it that frame and the rest). Nothing happens when ungated."""
        if not self.gated:
            return
        t0 = time.perf_counter_ns()
        stream = self.detector.open_stream()  # type: ignore[union-attr]
        self.busy_ns += time.perf_counter_ns() - t0
        self._utt = _Utterance(utterance_id, stream, first.start_ns)

    def feed(self, frame: AudioFrame) -> Woken | None:
        """One more frame of the open utterance; the wake phrase if it ends here."""
        utt = self._utt
        assert utt is not None
        if len(utt.frames) < MAX_WAKE_FRAMES:
            utt.frames.append(frame)
        t0 = time.perf_counter_ns()
        found = utt.stream.feed(frame.pcm)
        self.busy_ns += time.perf_counter_ns() - t0
        if not found:
            return None
        event = self._detected(utt, found[0])
        after = [f for f in utt.frames if self.origin_ns + f.end_ns > event.end_ns]
        utt.frames.clear()
        return Woken(event, after)

    def finish(self) -> WakeDetected | None:
        """The utterance ended: a wake phrase found at its very end (nothing follows it)."""
        utt = self._utt
        assert utt is not None
        self._utt = None
        t0 = time.perf_counter_ns()
        found = utt.stream.finish()
        self.busy_ns += time.perf_counter_ns() - t0
        return self._detected(utt, found[0]) if found else None

    def drop(self) -> None:
        """Muted: forget the open utterance."""
        self._utt = None

    def _detected(self, utt: _Utterance, found: Detection) -> WakeDetected:
        base = self.origin_ns + utt.first_ns
        return WakeDetected(
            self.clock.now_ns(), utt.utterance_id, found.phrase,
            base + int(found.start_s * 1e9), base + int(found.end_s * 1e9), found.score,
        )  # fmt: skip
