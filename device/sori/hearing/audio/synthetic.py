"""A signal shaped like speech, made from nothing: for warming up recognizers.

A recognizer's first utterance is slow because its decoder builds its search graph as it
goes (vosk composes its lexicon and language model lazily, state by state, and keeps what
it built); white noise or silence visits few of the states speech does. This signal has
what a decoder reacts to: voiced syllables with vowel formants and a moving pitch,
consonant-like noise bursts between them, words separated by short pauses. It says nothing
in any language, so it costs no recording and no licence, and a seed makes it the same
every time.

    rng = np.random.default_rng(0)
    pcm = to_pcm16(speech_like(6.0, rng))
"""

from __future__ import annotations

import numpy as np

from sori.hearing.audio.format import RATE_HZ

VOWEL_FORMANTS_HZ = (
    (800, 1200, 2500),  # ㅏ
    (500, 1800, 2500),  # ㅔ
    (300, 2300, 3000),  # ㅣ
    (450, 900, 2400),  # ㅓ
    (350, 800, 2300),  # ㅜ
    (400, 1400, 2400),  # ㅡ
    (550, 1700, 2500),  # ㅐ
)
"""First three formants of a few Korean vowels (adult speaker, approximate), in Hz."""
FORMANT_WIDTHS_HZ = (80.0, 100.0, 150.0)
LEVEL = 3000.0
"""RMS of the voiced parts on the int16 scale (about -21 dBFS: ordinary speech)."""


def speech_like(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """`seconds` of speech-shaped sound on the int16 scale (float32; `to_pcm16` for PCM)."""
    total = max(0, int(seconds * RATE_HZ))
    parts: list[np.ndarray] = []
    made = 0
    pitch_hz, phase = 140.0, 0.0
    while made < total:
        for _ in range(int(rng.integers(2, 5))):  # a word of 2-4 syllables
            burst = rng.standard_normal(int(RATE_HZ * rng.uniform(0.02, 0.06)))
            vowel, phase = _vowel(rng, pitch_hz, phase)
            parts += [burst * rng.uniform(0.05, 0.3), vowel]
            made += len(burst) + len(vowel)
            pitch_hz = float(np.clip(pitch_hz * rng.uniform(0.93, 1.05), 90, 240))
        pause = int(RATE_HZ * rng.uniform(0.05, 0.25))
        parts.append(rng.standard_normal(pause) * 0.003)
        made += pause
    signal = np.concatenate(parts)[:total] if parts else np.zeros(0)
    # a faint floor, as any microphone has, so the pauses are not digital silence
    return (signal * LEVEL + rng.standard_normal(total) * 30).astype(np.float32)


def _vowel(rng: np.random.Generator, pitch_hz: float, phase: float) -> tuple[np.ndarray, float]:
    """One voiced syllable (RMS 1): harmonics of a gliding pitch, weighted by formant
    resonances; and the phase to carry on from, so syllables join without a click."""
    samples = int(RATE_HZ * rng.uniform(0.12, 0.22))
    formants = np.array(VOWEL_FORMANTS_HZ[rng.integers(len(VOWEL_FORMANTS_HZ))], dtype=float)
    formants *= rng.uniform(0.9, 1.1)  # speakers differ
    pitch = pitch_hz * np.linspace(1.0, rng.uniform(0.85, 1.1), samples)
    phases = phase + 2 * np.pi * np.cumsum(pitch) / RATE_HZ
    harmonics = np.arange(1, int(7000 / pitch_hz) + 1)
    heard = harmonics[:, None] * pitch_hz
    gains = sum(
        1 / (1 + ((heard - f) / w) ** 2) for f, w in zip(formants, FORMANT_WIDTHS_HZ, strict=True)
    )
    wave = (gains * np.sin(harmonics[:, None] * phases[None, :])).sum(axis=0)
    wave *= np.sin(np.linspace(0, np.pi, samples)) ** 0.5  # rise and fall
    rms = float(np.sqrt(np.mean(wave**2)))
    return (wave / rms if rms else wave), float(phases[-1] % (2 * np.pi))
