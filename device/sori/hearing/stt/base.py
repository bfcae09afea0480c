"""The speech-to-text interface: open a stream per utterance, feed frames, finalize.

    stream = recognizer.open_stream()
    for frame in frames:
        partial = stream.feed(frame.pcm)     # a Hypothesis when the text changed, else None
    partial = stream.flush(120)              # a pause began: catch up now (early commit)
    final = stream.finalize()                # the final Hypothesis; the stream is done

A recognizer holds the loaded model (expensive, once per process); a stream is one
utterance (cheap). Backends live one per file and import their libraries lazily.

A recognizer's first utterance is slow (vosk builds its decoding graph lazily and keeps
what it built; thread pools start on first use), so `warm_up` decodes speech-like sound
once at start-up, through every pass and the flush path; the daemon does it in the
background (`warm_up_later`) and the first real utterance stops it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

FRAME_BYTES = 640
"""20 ms of 16 kHz s16le: the frames the pipeline feeds."""


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

    def flush(self, silence_ms: int, after: bytes = b"") -> Hypothesis | None:
        """A pause began: catch up as if `silence_ms` of silence had been heard, so the
        hypothesis reaches the end of speech now; the new partial when it changed. `after`
        is audio heard after the speech ended (quiet, and perhaps a faint tail of it): it
        begins the `silence_ms`, so a backend that closes what it heard at a pause closes
        it before `after`. The pause may be only a gap between words: audio fed afterwards
        must carry on the same utterance as if the pause had been `silence_ms` long (or
        `after`, if longer)."""
        ...

    def finalize(self) -> Hypothesis:
        """No more audio: the final hypothesis."""
        ...


def silence_after(after: bytes, silence_ms: int) -> bytes:
    """What a flush hears (`RecognizerStream.flush`): `after`, then digital silence to
    make `silence_ms` in all (16 kHz s16le: 32 bytes a millisecond)."""
    return after + bytes(max(0, 32 * silence_ms - len(after)))


class SpeechRecognizer(Protocol):
    """A loaded model that recognizes one utterance at a time."""

    name: str
    """Backend name for logs and traces ("vosk", "sherpa")."""

    def open_stream(self, snr_db: float | None = None) -> RecognizerStream:
        """A stream for one utterance; `snr_db`, how far its speech stood above the room
        as it began (dB), when known: a backend may ask more of what it hears in noise."""
        ...


@dataclass(frozen=True, slots=True)
class WarmUp:
    """What a warm-up did."""

    audio_s: float
    """Speech-like audio decoded, in seconds."""
    took_s: float
    """Wall-clock time it took, in seconds."""
    text: str = ""
    """What the recognizer made of it (nonsense; for the log)."""
    stopped: bool = False
    """Stopped before the end: a real utterance began, or Sori stopped (`warm_up_later`)."""


def warm_up(recognizer: SpeechRecognizer, seconds: float) -> WarmUp:
    """Decode `seconds` of speech-like sound once, so the first real utterance is as fast
    as the later ones: one stream fed it in 20 ms frames, with a pause flushed in the middle
    and audio after it (the early-commit path), then a flush and the final result: every
    pass and every stream method runs once. 0 seconds does nothing."""
    if seconds <= 0:
        return WarmUp(0.0, 0.0)
    return _warm_up(recognizer.open_stream(), seconds, threading.Event())


def warm_up_later(
    recognizer: SpeechRecognizer, seconds: float, report: Callable[[WarmUp], None]
) -> None:
    """`warm_up` on a thread, so that start-up need not wait for it; `report` gets what it
    did. A backend whose streams share its decoders (vosk) has a `warming` attribute: its
    first real stream calls it, which stops the warm-up at the next frame and waits for its
    stream to finish (a frame's decoding), so the utterance decodes alone and loses
    nothing; what was warmed stays warm."""
    if seconds <= 0:
        return
    stream = recognizer.open_stream()  # before `warming` is set: the warm-up's own stream
    stop, finished = threading.Event(), threading.Event()

    def run() -> None:
        try:
            report(_warm_up(stream, seconds, stop))
        finally:
            finished.set()

    def halt() -> None:
        stop.set()
        finished.wait()

    if hasattr(recognizer, "warming"):
        recognizer.warming = halt
    threading.Thread(target=run, name="sori-stt-warm", daemon=True).start()


def stop_warm_up(recognizer: SpeechRecognizer) -> None:
    """Stop `warm_up_later`'s warm-up of `recognizer`, if one runs, and wait for it (a
    frame's decoding): before a stream of its own, and when the daemon stops (its decoding
    on the recognizer's worker thread would hold the interpreter's exit)."""
    halt = getattr(recognizer, "warming", None)
    if halt is not None:
        recognizer.warming = None  # type: ignore[attr-defined]
        halt()


def release(recognizer: SpeechRecognizer) -> None:
    """When Sori stops: stop a warm-up (`stop_warm_up`), then let the threads the backend
    started end (its `close`, if it has one: vosk's second-pass worker). A thread the
    warm-up started is a daemon thread, which the daemon's shutdown waits for until its
    deadline (sori.commands.shutdown)."""
    stop_warm_up(recognizer)
    close = getattr(recognizer, "close", None)
    if close is not None:
        close()


def _warm_up(stream: RecognizerStream, seconds: float, stop: threading.Event) -> WarmUp:
    import numpy as np

    from sori.hearing.audio.augment import to_pcm16
    from sori.hearing.audio.synthetic import speech_like

    started = time.perf_counter()
    pcm = to_pcm16(speech_like(seconds, np.random.default_rng(0)))
    middle = len(pcm) // 2 // FRAME_BYTES * FRAME_BYTES
    fed = 0
    for fed in range(0, len(pcm), FRAME_BYTES):
        if stop.is_set():
            break
        if fed == middle:
            stream.flush(120)
        stream.feed(pcm[fed : fed + FRAME_BYTES])
    else:
        fed = len(pcm)
        stream.flush(120)
    final = stream.finalize()  # the decoders are reset for the next stream
    return WarmUp(fed / 2 / 16000, time.perf_counter() - started, final.text, stop.is_set())


def normalize_text(text: str) -> str:
    """Collapse whitespace (and sentencepiece's word marker) into single spaces."""
    return re.sub(r"\s+", " ", text.replace("\u2581", " ")).strip()
