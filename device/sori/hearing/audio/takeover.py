"""A louder talker takes over an utterance: a television was on when the recording began,
its babble opened the utterance and the beam was held on it; then the user speaks, louder,
from elsewhere. Without this the user is heard inside the television's utterance, through
a beam that points at the television.

`Takeover` watches the spectra while the array's front end holds its beam
(sori.hearing.audio.front_end), the voiced ones for:

- what the beam holds: the covariance of the spectra between looks that found no one
  new, which becomes the noise the new beam nulls;
- the last `RECENT_S` of them: where that sound comes from, less what was held, looked
  at every `EVERY_HOPS`. Less what was held, because whitened cross-spectra (PHAT) give
  every bin one vote, and a television nearer the array than the user wins the bins
  where it is not much weaker, even while the user is 10 dB louder overall; and a fan
  under a talker the beam holds wins them as well. So the first look finds no one: it
  only learns what is held.

A direction `APART_DEG` or more from the held one, in voice `LOUDER` than the held mean,
whose sound `GREW` since the beam was held, for `CHECKS` looks in a row (about 0.4 s)
that agree on it within `AGREE_DEG`, is a new talker:

- grew: through a beam towards it with the null on what was held, the recent sound gives
  out more than what was held does. A fan or a television under the talker the beam
  holds was there all along: it is in what was held, and does not grow;
- agree: the same talker's loud syllables are louder but come from where the beam
  points; a reflection, or what is left of the held source less its mean, points
  elsewhere for a moment and somewhere else the next, not to one place throughout;
- so the voice need be only a little louder than the held mean: a short command over a
  television holds its direction, but its pauses and soft syllables keep the recent
  voice within 1-3 dB of the television's loud stretch the beam was held on.

One takeover an utterance: the new talker's voice is the loud one now, and what the beam
held before (a television) quieter, so a second would only be their own syllables
measured against a mix.

Where the new talker began (`onset_hops`): the beam that takes over, MVDR towards them
with the null on what was held, is run over the last `HISTORY_S` of spectra, and their
voice began where its level steps up most: the split of the history whose later part is
loudest over its earlier part, in mean dB, when that step is `ONSET_DB` or more. A level
over the one the held covariance predicts was tried first: through a small array in
`sori test`'s room the new voice stood only 0-8 dB over it, the babble before them 8 dB
under it, and pauses split the voice into runs. Without such a step, the talker spoke
through all of the history. The beam is sure of a new talker from 0.4 s to well over a
second after their voice began, so no fixed delay finds their first word.
"""

from __future__ import annotations

import numpy as np

from sori.hearing.audio.array import DirectionFinder, beam_power, mvdr, power
from sori.hearing.audio.standing import angle_apart_deg

RECENT_S = 0.25
"""Time constant of the recent spectra's covariance, in seconds."""
EVERY_HOPS = 8
"""Voiced spectra between looks at where the recent ones come from."""
CHECKS = 3
"""Looks in a row that must find the new talker: 24 spectra, 0.4 s of its voice."""
APART_DEG = 40.0
"""How far from the held direction a new talker must be: a single talker's estimates
over a quarter of a second wander by up to twenty degrees in a reverberant room."""
LOUDER = 1.25
"""How much more power the recent voice must have than the held source's mean (1 dB).
A user who speaks a short command over a television 5 dB under them at the microphones
measured 1.3-2.8 times its mean at the looks that found them (the held mean is of the
loud stretch that opened the utterance); a quieter television that starts while the
user speaks, 0.1-0.4."""
GREW = 2.0
"""How much more power the recent sound must give out than what was held, through a beam
towards the new direction with the null on what was held (3 dB). Television held, user
speaking: 1.8-117 at the looks that found them; pink noise under a talker held, 5 dB
under them: 0.9-1.3, and 1.7 and 3.3 at two looks that found a reflection of it."""
AGREE_DEG = 20.0
"""How near each look of a run must find the new talker to the run's first: a talker
holds still, what is left of the held source less its mean wanders all round."""
HISTORY_S = 1.5
"""How far back the new talker's voice is looked for, in seconds."""
ONSET_DB = 6.0
"""How much louder, in mean dB, the new beam's output must be after a point of the
history than before it for the new voice to have begun there."""
MIN_SIDE = 4
"""Spectra each side of that point at least (64 ms): one loud or quiet spectrum is no step."""


class Takeover:
    """Watches a held beam for a louder talker elsewhere (see the module), for spectra of
    `bins` bins and `channels` microphones, one every `hop_s` seconds."""

    def __init__(self, finder: DirectionFinder, bins: int, channels: int, hop_s: float) -> None:
        self._finder = finder
        self._keep = float(np.exp(-hop_s / RECENT_S))
        self.held = np.zeros((bins, channels, channels), np.complex128)
        """Mean covariance of what the beam has held, per bin."""
        self._held_hops = 0
        self._pending = np.zeros_like(self.held)
        """Sum of the spectra's covariances since the last look, which joins `held` when
        that look finds no one new."""
        self._pending_hops = 0
        self._held_deg = 0.0
        self._held_power = 0.0
        self._recent = np.zeros((len(finder.band), channels, channels), np.complex128)
        self._recent_weight = 0.0
        self._hops = 0
        self._in_a_row = 0
        self._run_deg = 0.0
        """Where the first look of the current run found a new talker."""
        self._watching = False
        self._hop_s = hop_s
        self._history = np.zeros(
            (round(HISTORY_S / hop_s), len(finder.band), channels), np.complex64
        )
        """The band of the last spectra while held, voiced or not, a ring."""
        self._written = 0

    def start(self, held_deg: float, held_power: float) -> None:
        """The beam is held on `held_deg`, where voice of `held_power` (mean band power
        per spectrum) was gathered."""
        self.held[:] = 0.0
        self._pending[:] = 0.0
        self._held_hops = self._pending_hops = 0
        self._held_deg, self._held_power = held_deg, held_power
        self._recent[:] = 0.0
        self._recent_weight = 0.0
        self._hops = self._in_a_row = 0
        self._watching = True
        self._written = 0

    def hear(
        self,
        spectrum: np.ndarray,
        covariance: np.ndarray,
        voiced: bool,
        allowed: np.ndarray | None = None,
    ) -> int | None:
        """One spectrum (bins, microphones) while the beam is held, its `covariance`
        (`sori.hearing.audio.array.outer`), and whether the voice detector called it
        voice; the grid index of a new talker that took over (among the `allowed`
        directions), else None. After one takeover it watches no more until the next
        `start`."""
        if not self._watching:
            return None
        self._history[self._written % len(self._history)] = spectrum[self._finder.band]
        self._written += 1
        if not voiced:
            return None
        self._pending += covariance
        self._pending_hops += 1
        keep = self._keep
        self._recent *= keep
        self._recent += (1 - keep) * covariance[self._finder.band]
        self._recent_weight = keep * self._recent_weight + (1 - keep)
        self._hops += 1
        if self._hops % EVERY_HOPS:
            return None
        new_talker = False
        if self._held_hops:  # the first look only learns what is held: see the module
            recent = self._recent / self._recent_weight
            held = self.held[self._finder.band]
            found = self._finder.find(recent, held, allowed)
            found_deg = float(self._finder.azimuth_deg[found])
            elsewhere = angle_apart_deg(found_deg, self._held_deg) >= APART_DEG
            louder = power(recent) >= LOUDER * self._held_power
            new_talker = elsewhere and louder and self._grew(found, recent, held)
        if new_talker:
            agrees = angle_apart_deg(found_deg, self._run_deg) <= AGREE_DEG
            if not (self._in_a_row and agrees):  # a run starts here
                self._in_a_row, self._run_deg = 0, found_deg
            self._in_a_row += 1
            if self._in_a_row < CHECKS:
                return None
            self._watching = False
            return found
        self._in_a_row = 0
        total = self._held_hops + self._pending_hops
        self.held = (self.held * self._held_hops + self._pending) / total
        self._held_hops = total
        self._pending[:] = 0.0
        self._pending_hops = 0
        return None

    def _grew(self, found: int, recent: np.ndarray, held: np.ndarray) -> bool:
        """Whether the sound from direction `found` grew since the beam was held (`GREW`;
        covariances over the finder's band)."""
        weights = mvdr(self._finder.look(found), held)
        return beam_power(weights, recent) >= GREW * beam_power(weights, held)

    def onset_hops(self, look: np.ndarray) -> int:
        """How many spectra before the last one heard the new talker's voice began (see
        the module), for the beam that takes over towards `look` (steering vectors over
        the finder's band, shaped (bins, microphones)); all the history when what was
        held is unknown or the level never steps up."""
        kept = min(self._written, len(self._history))
        if not self._held_hops or kept < 2 * MIN_SIDE:
            return kept
        weights = mvdr(look, self.held[self._finder.band])
        order = (np.arange(kept) + self._written - kept) % len(self._history)
        beamed = np.einsum("fm,hfm->hf", weights.conj(), self._history[order])
        level = 10 * np.log10(np.sum(np.abs(beamed) ** 2, axis=1) + 1e-20)
        sums = np.concatenate(([0.0], np.cumsum(level)))
        split = np.arange(MIN_SIDE, kept - MIN_SIDE + 1)
        before = sums[split] / split
        after = (sums[kept] - sums[split]) / (kept - split)
        steps = after - before
        best = int(np.argmax(steps))
        if steps[best] < ONSET_DB:
            return kept
        return kept - int(split[best])
