"""A standing source: a sound that talks from one place and does not stop, a television
or a radio. The voice detector calls it voice, so the quiet between utterances never
comes, and the first utterance it makes takes the direction. What tells it from a user
is time: a user says a command and stops, a television goes on for minutes.

`StandingSource` watches the room's sound, every spectrum the array's front end does not
take as the talker's (sori.hearing.audio.front_end):

- their spatial covariance, averaged over `ROOM_S`, is what the beam nulls; the same with
  each spectrum weighed alike, whatever its power, is where the room's sound comes from
  (so that a command's loud echoes do not outweigh the seconds of quiet after it);
- every `CHECK_HOPS` that direction is found again; one that holds within `SAME_DEG`
  while the voice detector hears `STANDING_S` of voice is a standing source. A fan or a
  fridge is no voice: the beam learns it in the quiet between utterances. A user who says a
  command and stops gives a few seconds of voice, and the quiet that follows has no
  direction of its own.

While one stands, the front end treats its covariance as the noise (MVDR nulls it), looks
for the talker away from it (`AVOID_DEG`), and lets the voice detector hear only what
stands clear of what is left of it in the beam.
"""

from __future__ import annotations

import numpy as np

from sori.hearing.audio.array import DirectionFinder, power

STANDING_S = 8.0
"""Voice the room's sound must give from one direction to be a standing source, in
seconds: longer than anything a user says in one breath, shorter than a programme."""
ROOM_S = 2.0
"""Time constant of the room's covariance, in seconds (the front end follows the level a
standing source leaves in its beam as fast)."""
CHECK_HOPS = 16
"""Spectra between looks at the room's direction (a quarter of a second at 16 kHz)."""
SAME_DEG = 20.0
"""The room's direction moved less than this: the same source (a small array's estimate
of a source in a reverberant room wanders by about ten degrees)."""
AVOID_DEG = 30.0
"""A talker is not looked for this close to a standing source."""


def angle_apart_deg(a: float | np.ndarray, b: float) -> float | np.ndarray:
    """The angle between two azimuths (or each of an array of them and one), in degrees,
    in [0, 180]."""
    return np.abs((a - b + 180.0) % 360.0 - 180.0)


class StandingSource:
    """What the room's sound says of a standing source (see the module), for spectra of
    `bins` bins and `channels` microphones, one every `hop_s` seconds."""

    def __init__(self, finder: DirectionFinder, bins: int, channels: int, hop_s: float) -> None:
        self._finder = finder
        self._keep = float(np.exp(-hop_s / ROOM_S))
        self._hop_s = hop_s
        self.covariance = np.zeros((bins, channels, channels), np.complex128)
        """The room's spatial covariance, per bin."""
        self._bearing = np.zeros((len(finder.band), channels, channels), np.complex128)
        """The same over the finder's band, each spectrum weighed alike."""
        self.azimuth_deg: float | None = None
        """Direction of the standing source, in degrees; None while there is none."""
        self.index: int | None = None
        """Its direction on the finder's grid; None while there is none."""
        self.allowed: np.ndarray | None = None
        """The grid directions a talker is looked for in while it stands (a mask), at
        least `AVOID_DEG` from it; None while there is none."""
        self._hops = 0
        self._voiced_s = 0.0
        """Voice heard since the last look at the direction, in seconds."""
        self._run_deg: float | None = None
        self._run_s = 0.0
        """Voice heard while the room's sound held `_run_deg`, in seconds."""

    @property
    def present(self) -> bool:
        return self.azimuth_deg is not None

    def near(self, azimuth_deg: float) -> bool:
        """Whether `azimuth_deg` is within `AVOID_DEG` of where the room's sound has come
        from lately (a standing source, or one that may become one); True before the
        room's sound has a direction at all."""
        if self._run_deg is None:
            return True
        return bool(angle_apart_deg(azimuth_deg, self._run_deg) < AVOID_DEG)

    def hear(self, covariance: np.ndarray, voiced: bool) -> bool:
        """The covariance of one spectrum of the room's sound (bins, microphones,
        microphones), and whether the voice detector called it voice; whether the
        standing source came, went or moved."""
        keep = self._keep
        self.covariance *= keep
        self.covariance += (1 - keep) * covariance
        band = covariance[self._finder.band]
        self._bearing *= keep
        self._bearing += (1 - keep) / (power(band) + 1e-20) * band
        self._voiced_s += self._hop_s * voiced
        self._hops += 1
        if self._hops % CHECK_HOPS:
            return False
        return self._check()

    def _check(self) -> bool:
        found = self._finder.find(self._bearing)
        azimuth = float(self._finder.azimuth_deg[found])
        if self._run_deg is not None and angle_apart_deg(azimuth, self._run_deg) <= SAME_DEG:
            self._run_s += self._voiced_s
        else:
            self._run_deg, self._run_s = azimuth, 0.0
        self._voiced_s = 0.0
        standing = self._run_s >= STANDING_S
        before = self.index
        self.index = found if standing else None
        self.azimuth_deg = azimuth if standing else None
        self.allowed = None
        if standing:
            self.allowed = angle_apart_deg(self._finder.azimuth_deg, azimuth) >= AVOID_DEG
        return before != self.index
