"""The speech-to-text interface: open a stream per utterance, feed frames, finalize.

    stream = recognizer.open_stream()
    for frame in frames:
        partial = stream.feed(frame.pcm)     # a Hypothesis when the text changed, else None
    partial = stream.flush(120)              # a pause began: catch up now (early commit)
    final = stream.finalize()                # the final Hypothesis; the stream is done

A recognizer holds the loaded model (expensive, once per process); a stream is one
utterance (cheap). Backends live one per file and import their libraries lazily.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Word:
    """One recognized word."""

    text: str
    """The word."""
    confidence: float = 1.0
    """Recognizer confidence in [0, 1]."""


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """A partial or final transcript."""

    text: str
    """Words separated by single spaces; empty when nothing was heard."""
    confidence: float = 1.0
    """Recognizer confidence in [0, 1]; 1.0 when the backend gives none."""
    words: tuple[Word, ...] = ()
    """Per-word detail where the backend gives it."""
    source: str = ""
    """Which pass produced it, when a backend runs several ("free", "grammar"). A backend
    reports a "grammar" hypothesis only when the phrase-constrained result stands."""
    lr_score: float | None = None
    """Likelihood ratio of the phrase-constrained decode against the free-form one: total
    path score of the constrained decode minus that of the free-form decode of the same
    audio, per second of audio (log-likelihood units per second; above 0 the phrases explain
    the audio at least as well as the full language model). None when not scored."""


class RecognizerStream(Protocol):
    """One utterance being recognized."""

    def feed(self, pcm: bytes) -> Hypothesis | None:
        """Accept 16 kHz mono s16le audio; the new partial hypothesis when it changed."""
        ...

    def flush(self, silence_ms: int) -> Hypothesis | None:
        """A pause began: catch up as if `silence_ms` of silence had been heard, so the
        hypothesis reaches the end of speech now; the new partial when it changed. The
        pause may be only a gap between words: audio fed afterwards must carry on the same
        utterance as if the pause had been `silence_ms` long."""
        ...

    def finalize(self) -> Hypothesis:
        """No more audio: the final hypothesis."""
        ...


class SpeechRecognizer(Protocol):
    """A loaded model that recognizes one utterance at a time."""

    name: str
    """Backend name for logs and traces ("vosk", "sherpa")."""

    def open_stream(self) -> RecognizerStream: ...


def normalize_text(text: str) -> str:
    """Collapse whitespace (and sentencepiece's word marker) into single spaces."""
    return re.sub(r"\s+", " ", text.replace("\u2581", " ")).strip()
