"""Fakes and a harness for testing pipelines without microphones or models.

frames = tone_frames([(300, False), (800, True), (600, False)])   # ms of silence/tone
hearing = Hearing(EnergyScorer(), ScriptedRecognizer(...), presets, clock=FakeClock())
assert kinds(run_frames(hearing, frames)) == [SpeechStarted, ..., UtteranceHeard]
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sori.core.events import Event
from sori.hearing.audio.format import RATE_HZ, AudioFrame, float_to_s16, s16_to_float
from sori.hearing.audio.ring import FrameChunker
from sori.hearing.pipeline import Hearing
from sori.hearing.stt.base import Hypothesis, silence_after


class EnergyScorer:
    """A voice scorer for synthetic audio: voiced when the frame's RMS passes `threshold`."""

    def __init__(self, threshold: float = 0.01) -> None:
        self.threshold = threshold

    def score(self, pcm: bytes) -> float:
        x = s16_to_float(pcm)
        return 1.0 if len(x) and float(np.sqrt(np.mean(x * x))) >= self.threshold else 0.0


@dataclass(frozen=True, slots=True)
class Cue:
    """A scripted partial hypothesis."""

    after_ms: int
    """It appears once this much audio has been fed to the stream, in milliseconds."""
    text: str
    """The partial text."""
    source: str = ""
    """The pass it comes from ("grammar": a phrase-constrained result that stands)."""
    lr_score: float | None = None
    """Its likelihood ratio, constrained minus free-form score per second; None = unscored."""


class ScriptedRecognizer:
    """A recognizer whose utterances are scripted: each stream takes the next script.

    A script is (cues, final text). Every stream records the audio it was fed, so tests
    can check what reached the recognizer (pre-roll included)."""

    name = "scripted"

    def __init__(self, scripts: Sequence[tuple[Sequence[Cue], str]]) -> None:
        self.scripts = list(scripts)
        self.streams: list[ScriptedStream] = []
        self.snrs_db: list[float | None] = []
        """The SNR each stream was opened with (`SpeechRecognizer.open_stream`)."""

    def open_stream(self, snr_db: float | None = None) -> ScriptedStream:
        self.snrs_db.append(snr_db)
        index = len(self.streams)
        cues, final = self.scripts[index] if index < len(self.scripts) else ((), "")
        stream = ScriptedStream(list(cues), final)
        self.streams.append(stream)
        return stream


class ScriptedStream:
    def __init__(self, cues: list[Cue], final: str) -> None:
        self.cues = sorted(cues, key=lambda c: c.after_ms)
        self.final = final
        self.fed_bytes = 0
        self.audio = bytearray()
        """The audio fed, s16le, in order."""
        self.feeds: list[int] = []
        """Size of each piece of audio fed, in bytes."""
        self.flushes: list[tuple[int, int]] = []
        """(bytes fed before, bytes of `after`) of each flush."""
        self.finalized = False
        self._shown = ""

    @property
    def fed_ms(self) -> float:
        return self.fed_bytes / 2 / RATE_HZ * 1000

    def feed(self, pcm: bytes) -> Hypothesis | None:
        self.fed_bytes += len(pcm)
        self.audio += pcm
        self.feeds.append(len(pcm))
        due = [c for c in self.cues if c.after_ms <= self.fed_ms]
        if due and due[-1].text != self._shown:
            cue = due[-1]
            self._shown = cue.text
            return Hypothesis(cue.text, source=cue.source, lr_score=cue.lr_score)
        return None

    def flush(self, silence_ms: int, after: bytes = b"") -> Hypothesis | None:
        self.flushes.append((self.fed_bytes, len(after)))
        return self.feed(silence_after(after, silence_ms))

    def finalize(self) -> Hypothesis:
        """The final text, from the pass (and with the score) of the last cue when that
        cue says the same."""
        self.finalized = True
        last = self.cues[-1] if self.cues else None
        if last is not None and last.text == self.final:
            return Hypothesis(self.final, source=last.source, lr_score=last.lr_score)
        return Hypothesis(self.final)


def tone(ms: int, voiced: bool, freq_hz: float = 220.0, level: float = 0.3) -> np.ndarray:
    """`ms` of a tone (voiced) or of silence, as float samples at 16 kHz. The tone swells
    and fades four times a second, like syllables: a steady one would be taken for hum by
    the endpointer's noise floor."""
    n = RATE_HZ * ms // 1000
    if not voiced:
        return np.zeros(n, np.float32)
    t = np.arange(n) / RATE_HZ
    syllables = 0.55 - 0.45 * np.cos(2 * np.pi * 4 * t)
    return (level * syllables * np.sin(2 * np.pi * freq_hz * t)).astype(np.float32)


def tone_pcm(segments: Iterable[tuple[int, bool]]) -> bytes:
    """Pipeline PCM of consecutive (milliseconds, voiced) segments."""
    return float_to_s16(np.concatenate([tone(ms, voiced) for ms, voiced in segments]))


def to_frames(pcm: bytes, frame_ms: int = 20) -> list[AudioFrame]:
    chunker = FrameChunker(frame_ms)
    return [*chunker.push(pcm), *chunker.flush()]


def tone_frames(segments: Iterable[tuple[int, bool]], frame_ms: int = 20) -> list[AudioFrame]:
    return to_frames(tone_pcm(segments), frame_ms)


def run_frames(hearing: Hearing, frames: Iterable[AudioFrame], clock=None) -> list[Event]:
    """Push every frame, then end the stream; all events in order. With a `FakeClock`,
    the clock is advanced to each frame's end before it is pushed (real-time arrival)."""
    events: list[Event] = []
    for frame in frames:
        if clock is not None and hasattr(clock, "advance_ns"):
            target = hearing.origin_ns + frame.end_ns
            if target > clock.now_ns():
                clock.advance_ns(target - clock.now_ns())
        events += hearing.push(frame)
    events += hearing.end()
    return events


def kinds(events: Iterable[Event]) -> list[type]:
    return [type(e) for e in events]


def character_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edits, reference length) with spaces ignored: the parts of a character error rate.

    Korean STT splits and merges words freely, so spacing is not counted as an error.
    """
    ref, hyp = reference.replace(" ", ""), hypothesis.replace(" ", "")
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1], len(ref)


def agreement(a: str, b: str) -> float:
    """Character similarity of two transcripts in [0, 1], spaces ignored."""
    a, b = a.replace(" ", ""), b.replace(" ", "")
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
