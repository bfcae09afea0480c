"""A fixture's audio as the pipeline will hear it: its clips joined, then put in the room
an augmentation describes (sori.hearing.audio.augment does the signal work, and
sori.hearing.audio.room the simulated rooms, which may give several microphones).

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
from sori.hearing.audio.room import simulate_room
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


def talker_from_s(signal: np.ndarray, augmentation: Augmentation) -> float:
    """Where the fixture's talker begins to speak in the audio `augmentation` makes of
    `signal`, in seconds: after the room's interferer has played alone (`lead_s`), and
    after the recording's own silence before the voice (its first 20 ms within 30 dB of
    its loudest). 0.0 when nothing plays first."""
    room = augmentation.room
    if room is None or not room.lead_s:
        return 0.0
    frame = RATE_HZ // 50
    frames = np.asarray(signal[: len(signal) // frame * frame], np.float64).reshape(-1, frame)
    power = np.mean(np.square(frames), axis=1)
    voiced = np.flatnonzero(power >= power.max() * 10 ** (-30 / 10)) if power.size else []
    onset_s = voiced[0] * frame / RATE_HZ if len(voiced) else 0.0
    return room.lead_s + onset_s / augmentation.speed


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
    (other recordings), or of the signal itself when there are none. A simulated room
    (`augmentation.room`) plays the noise from the interferer's place instead, and with
    several microphones gives their channels, shaped (samples, mics)."""
    out = np.asarray(signal, dtype=np.float32)
    if augmentation.speed != 1.0:
        out = change_speed(out, augmentation.speed)
    if augmentation.room is not None:  # the noise plays at the interferer's place
        interferer = None
        if augmentation.noise is not None:  # it may play alone for a while first
            length = len(out) + round(augmentation.room.lead_s * RATE_HZ)
            interferer = noise(augmentation.noise, out, rng, voices, length)
        snr = augmentation.snr_db or 0.0
        heard = simulate_room(out, augmentation.room, interferer, snr).channels
        out = heard[:, 0] if augmentation.room.mics == 1 else heard
    if augmentation.reverb:
        out = reverberate(out, room_impulse(ROOMS_RT60_S[augmentation.reverb], rng))
    if augmentation.gain_db:
        out = gain_db(out, augmentation.gain_db)
    if augmentation.noise is not None and augmentation.room is None:
        out = mix_at_snr(out, noise(augmentation.noise, out, rng, voices), augmentation.snr_db)
    return out


def noise(
    kind: str,
    signal: np.ndarray,
    rng: np.random.Generator,
    voices: Sequence[np.ndarray],
    length: int | None = None,
) -> np.ndarray:
    """Noise of `kind`, `length` samples long (as long as `signal` by default); babble
    made of `voices`, or of the signal."""
    length = len(signal) if length is None else length
    if kind == "babble":
        return babble(list(voices) or [signal], length, rng, BABBLE_TALKERS)
    return make_noise(kind, length, rng)
