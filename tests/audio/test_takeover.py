"""A louder talker elsewhere takes a held beam over (sori.hearing.audio.takeover); a sound
that was there all along, under the talker the beam holds, does not: its sound has not
grown since the beam was held, however loud the talker's syllables are meanwhile.

The sound is plane waves of random spectra, so a look can be pointed where the test
wants (`allowed`): the fan's direction, which a reverberant room's estimates sometimes
find on their own."""

from __future__ import annotations

import numpy as np
from array_rooms import geometry

from sori.hearing.audio.array import DirectionFinder, outer, power, steering, unit_vectors
from sori.hearing.audio.format import RATE_HZ
from sori.hearing.audio.front_end import FFT_SIZE, HOP
from sori.hearing.audio.standing import angle_apart_deg
from sori.hearing.audio.takeover import Takeover

TALKER_DEG, FAN_DEG = 60.0, 160.0
FREQS = np.fft.rfftfreq(FFT_SIZE, 1 / RATE_HZ)


def spectra(sources: list[tuple[float, float]], hops: int, rng) -> np.ndarray:
    """`hops` spectra (bins, microphones) of plane waves from (azimuth, power) each."""
    out = np.zeros((hops, len(FREQS), 4), np.complex128)
    for azimuth_deg, level in sources:
        toward = unit_vectors(np.array([azimuth_deg]), np.zeros(1))[0]
        look = steering(geometry(), FREQS, toward)
        said = rng.standard_normal((hops, len(FREQS))) + 1j * rng.standard_normal(
            (hops, len(FREQS))
        )
        out += np.sqrt(level / 2) * said[:, :, None] * look[None]
    return out


def takeovers(later: list[tuple[float, float]]) -> list[int]:
    """The beam held on the talker over a fan 5 dB under them for 1 s, then `later`
    sounds for 1 s, the looks pointed near the fan: where the takeover turned to."""
    rng = np.random.default_rng(7)
    finder = DirectionFinder(geometry(), FFT_SIZE, RATE_HZ)
    watch = Takeover(finder, len(FREQS), 4, HOP / RATE_HZ)
    held = spectra([(TALKER_DEG, 1.0), (FAN_DEG, 0.3)], 62, rng)
    watch.start(TALKER_DEG, float(np.mean([power(outer(s)[finder.band]) for s in held])))
    near_fan = angle_apart_deg(finder.azimuth_deg, FAN_DEG) <= 10
    found = []
    for spectrum in [*held, *spectra(later, 62, rng)]:
        turned = watch.hear(spectrum, outer(spectrum), True, near_fan)
        if turned is not None:
            found.append(float(finder.azimuth_deg[turned]))
    return found


def test_a_fan_under_the_held_talker_takes_nothing_over_while_they_speak_up():
    assert takeovers([(TALKER_DEG, 2.0), (FAN_DEG, 0.3)]) == []


def test_a_new_voice_from_where_the_fan_is_takes_over():
    (turned,) = takeovers([(TALKER_DEG, 1.0), (FAN_DEG, 0.3), (FAN_DEG + 4, 2.0)])
    assert angle_apart_deg(turned, FAN_DEG) <= 10
