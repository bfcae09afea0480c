"""A fixture's audio as the pipeline will hear it: its clips joined, then put in the room
an augmentation describes (sori.hearing.audio.augment does the signal work).

Every condition is deterministic: the noise and the room are drawn from a generator
seeded by the fixture and the augmentation, so a run repeats exactly, in any worker.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sori.hearing.audio.augment import (
    ROOMS_RT60_S,
    babble,
    change_speed,
    gain_db,
    make_noise,
    mix_at_snr,
    reverberate,
    room_impulse,
)
from sori.hearing.audio.format import RATE_HZ, read_file
from sori.testing.harness.manifest import Augmentation, Fixture

BABBLE_TALKERS = 4
"""Voices talking at once in babble noise."""


def clip(path: Path) -> np.ndarray:
    """A WAV/FLAC file as float samples on the int16 scale at 16 kHz."""
    return np.frombuffer(read_file(path), dtype="<i2").astype(np.float32)


def fixture_audio(fixture: Fixture) -> np.ndarray:
    """The fixture's clips joined with `gap_s` of silence between them."""
    gap = np.zeros(int(fixture.gap_s * RATE_HZ), np.float32)
    parts: list[np.ndarray] = []
    for k, path in enumerate(fixture.audio):
        if k:
            parts.append(gap)
        parts.append(clip(path))
    return np.concatenate(parts)


def seed(fixture: Fixture, augmentation: Augmentation) -> int:
    """A stable seed for this fixture under this augmentation (not Python's salted hash)."""
    return zlib.crc32(f"{fixture.index}:{fixture.name}:{augmentation.name}".encode())


def apply(
    signal: np.ndarray,
    augmentation: Augmentation,
    rng: np.random.Generator,
    voices: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """`signal` under `augmentation`: speed, then room, then gain, then noise at the SNR
    measured against the speech as it reaches the microphone. Babble is made of `voices`
    (other recordings), or of the signal itself when there are none."""
    out = np.asarray(signal, dtype=np.float32)
    if augmentation.speed != 1.0:
        out = change_speed(out, augmentation.speed)
    if augmentation.reverb:
        out = reverberate(out, room_impulse(ROOMS_RT60_S[augmentation.reverb], rng))
    if augmentation.gain_db:
        out = gain_db(out, augmentation.gain_db)
    if augmentation.noise is not None:
        if augmentation.noise == "babble":
            noise = babble(list(voices) or [out], len(out), rng, BABBLE_TALKERS)
        else:
            noise = make_noise(augmentation.noise, len(out), rng)
        out = mix_at_snr(out, noise, augmentation.snr_db)
    return out
