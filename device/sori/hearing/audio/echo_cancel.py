"""Acoustic echo cancellation: Sori's own voice taken out of the microphone's audio.

The microphone of a speaker hears the speaker. Without cancellation the voice detector
hears a reply as speech, the recognizer hears Sori's words, and a user's "소리야" said over
a reply is masked by it. The player records what it hands to the speaker, and when
(`sori.hearing.audio.played.PlayedAudio`); that record is the reference. An adaptive filter
learns how the room turns the reference into what the microphone hears (the speaker's
delay, its loudness, the room's reflections) and subtracts its estimate from every
frame, so what is left is the room without Sori: the user.

The filter is a partitioned-block frequency-domain NLMS filter (one block per audio frame,
`TAPS_MS` of echo path in `ceil(TAPS_MS / frame)` partitions, each adapted with the
gradient constrained to a linear convolution). Adapting while the user talks over a
reply (double talk) would teach the filter the user's voice as echo, so two filters run:
a background filter always adapts, and the foreground filter, whose output is heard,
takes the background's weights only while they cancel clearly better
(`COPY_RATIO`, `COPY_BLOCKS`); a background filter that has gone astray restarts from the
foreground (`RESET_RATIO`). The echo path of a speaker and a microphone in a room changes
little, so the filter keeps what it learned from one reply to the next, and across
restarts (sori.hearing.audio.echo_path). When the foreground's estimate, scaled, would
cancel clearly better (the rule of `COPY_RATIO` and `COPY_BLOCKS`: the speaker was turned
up or down, muted or moved since it learned), the foreground is scaled to the level at
which the microphone hears its echo.

While Sori is silent (no reference for as long as the filter reaches) frames pass as they
are, at no cost. An echo the microphone hears before the record says it was played, or
later than `TAPS_MS`, is not cancelled: a board whose capture and playback clocks drift
apart, or a hardware echo canceller, wants `audio.echo_cancel = "off"`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

import numpy as np

from sori.hearing.audio.format import RATE_HZ, AudioFrame
from sori.hearing.audio.played import PlayedAudio

TAPS_MS = 256
"""How long an echo path the filter models, in milliseconds: the speaker's and the sound
card's delay (tens of ms) and the room's early reflections."""
STEP = 1.0
"""Adaptation step of the normalised filter (0 to 1: faster convergence, more noise).
Measured on Sori's voice through a room (RT60 0.4 s): 0.5 cancels 1.5 dB in the first
second, 16.8 dB in the fifth and 26.4 dB from then on, 0.8 2.1, 23.0 and 31.4 dB, 1.0 2.3,
25.6 and 32.6 dB. With room noise 20 dB under the echo, 1.0 leaves about 1 dB more of
Sori's voice than 0.8 and 4-8 dB less of music; it finds the wake phrase over Sori's
reply as often or more (docs/benchmarks.md, "The filter's step")."""
POWER_SMOOTHING = 0.9
"""Per-bin reference power: this much of the last estimate is kept each block."""
REGULARISATION = 1e3
"""Added to each bin's reference power (int16 scale, squared), so near-silent bins of the
reference do not blow the step up."""
COPY_RATIO = 0.8
"""The background filter's residual must be below this share of the foreground's..."""
COPY_BLOCKS = 3
"""...for this many blocks in a row before the foreground takes its weights."""
RESET_RATIO = 4.0
"""A background residual this many times the foreground's: it has adapted to the user's
voice (double talk), so it starts again from the foreground."""
MAX_GAIN = 4.0
"""The most the foreground is scaled up in one step (12 dB): a speaker turned up between
two replies (see `EchoCanceller._rescale`)."""
ENERGY_SMOOTHING = 0.7
"""Residual energies compared above: this much of the last estimate kept each block."""


class EchoCanceller:
    """Cancels the echo of a reference in blocks of `block` samples (see the module)."""

    def __init__(self, block: int, taps_ms: int = TAPS_MS, rate_hz: int = RATE_HZ) -> None:
        self.block = block
        self.partitions = -(-taps_ms * rate_hz // 1000 // block)
        bins = block + 1
        self._spectra = np.zeros((self.partitions, bins), np.complex128)
        """The reference's latest blocks, newest first, each with the block before it."""
        self._background = np.zeros_like(self._spectra)
        self._foreground = np.zeros_like(self._spectra)
        self._previous = np.zeros(block)
        self._pair = np.zeros(2 * block)
        self._power = np.zeros(bins)
        self._background_energy = self._foreground_energy = self._mic_energy = 0.0
        self._cross_energy = self._estimate_energy = 0.0
        """The microphone times the foreground's estimate, and the estimate's energy."""
        self._better_blocks = self._scaled_better_blocks = 0
        self.changes = 0
        """How often the foreground has changed (taken the background's weights, or been
        rescaled): a store keeps the path when this has moved since it last did."""
        self._quiet_blocks = self.partitions
        """Blocks since the reference last held sound: when the filter's whole reach has
        been quiet there is no echo left to cancel."""

    @property
    def active(self) -> bool:
        """Whether the latest block had an echo to cancel."""
        return self._quiet_blocks < self.partitions

    def echo_path(self) -> np.ndarray:
        """The echo path the foreground has learned: its impulse response, `partitions`
        rows of `block` taps (float32, the latest first)."""
        return np.fft.irfft(self._foreground, axis=1)[:, : self.block].astype(np.float32)

    def start_from(self, echo_path: np.ndarray) -> None:
        """The foreground set to `echo_path` (as `echo_path()` gives it), so the first
        reply is cancelled as well as the last one was. The background still learns from
        nothing: where the path is still the room's it soon takes the foreground's
        weights (`RESET_RATIO`), and where it is not, it learns the room as fast as a
        filter that never had one (a wrong start would slow it down)."""
        if echo_path.shape != (self.partitions, self.block):
            raise ValueError(
                f"an echo path of shape {echo_path.shape}, not ({self.partitions}, {self.block})"
            )
        taps = np.zeros((self.partitions, 2 * self.block))
        taps[:, : self.block] = echo_path
        self._foreground = np.fft.rfft(taps, axis=1)

    def process(self, mic: np.ndarray, reference: np.ndarray) -> np.ndarray | None:
        """`mic` (one block, float, int16 scale) without the echo of `reference` (what the
        speaker played during the same block); None when there is no echo to cancel (the
        filter's whole reach was quiet): `mic` is as it was."""
        sounding = bool(reference.any())
        self._quiet_blocks = 0 if sounding else self._quiet_blocks + 1
        if not self.active:
            if self._quiet_blocks == self.partitions:
                self._spectra[:] = 0.0  # what is still there is as old as the filter's reach
            self._previous[:] = reference
            return None
        n = self.block
        self._pair[:n], self._pair[n:] = self._previous, reference
        self._previous[:] = reference
        self._spectra[1:] = self._spectra[:-1]
        self._spectra[0] = np.fft.rfft(self._pair)
        background = mic - self._estimate(self._background)
        estimate = self._estimate(self._foreground)
        foreground = mic - estimate
        if sounding:
            self._adapt(background)
        self._track(mic, estimate, background, foreground)
        if self._scaling_pays():
            return mic - self._rescale() * estimate
        self._choose()
        return foreground

    def _estimate(self, weights: np.ndarray) -> np.ndarray:
        return np.fft.irfft((weights * self._spectra).sum(axis=0))[self.block :]

    def _adapt(self, residual: np.ndarray) -> None:
        """One normalised, gradient-constrained step of the background filter."""
        n = self.block
        self._power *= POWER_SMOOTHING
        self._power += (1 - POWER_SMOOTHING) * np.abs(self._spectra[0]) ** 2
        self._pair[:n], self._pair[n:] = 0.0, residual
        error = np.fft.rfft(self._pair)
        norm = self.partitions * self._power + REGULARISATION
        self._background += STEP * np.conj(self._spectra) * (error / norm)
        taps = np.fft.irfft(self._background, axis=1)
        taps[:, n:] = 0.0  # a linear, not circular, convolution
        self._background = np.fft.rfft(taps, axis=1)

    def _track(
        self, mic: np.ndarray, estimate: np.ndarray, background: np.ndarray, foreground: np.ndarray
    ) -> None:
        """The energies compared below, smoothed over the last blocks."""
        self._mic_energy = _smoothed(self._mic_energy, mic @ mic)
        self._cross_energy = _smoothed(self._cross_energy, mic @ estimate)
        self._estimate_energy = _smoothed(self._estimate_energy, estimate @ estimate)
        self._background_energy = _smoothed(self._background_energy, background @ background)
        self._foreground_energy = _smoothed(self._foreground_energy, foreground @ foreground)

    def _fitted_gain(self) -> float:
        """The gain at which the foreground's estimate best fits the microphone over the
        last blocks (least squares, 0 to `MAX_GAIN`)."""
        if self._estimate_energy <= 0.0:
            return 0.0
        return min(max(self._cross_energy / self._estimate_energy, 0.0), MAX_GAIN)

    def _scaled_energy(self, gain: float) -> float:
        """The foreground's residual energy were its estimate scaled by `gain`."""
        return self._mic_energy - 2 * gain * self._cross_energy + gain**2 * self._estimate_energy

    def _scaling_pays(self) -> bool:
        """Whether the foreground scaled to `_fitted_gain` has cancelled clearly better
        (`COPY_RATIO`) for `COPY_BLOCKS` blocks in a row."""
        scaled = self._scaled_energy(self._fitted_gain())
        if scaled < COPY_RATIO * self._foreground_energy:
            self._scaled_better_blocks += 1
        else:
            self._scaled_better_blocks = 0
        return self._scaled_better_blocks >= COPY_BLOCKS

    def _rescale(self) -> float:
        """The foreground scaled to `_fitted_gain`: a speaker turned down or up keeps its
        path at the new level, a muted or moved one next to nothing of it. The gain."""
        gain = self._fitted_gain()
        self._foreground *= gain
        self._foreground_energy = self._scaled_energy(gain)
        self._cross_energy *= gain
        self._estimate_energy *= gain**2
        self._scaled_better_blocks = self._better_blocks = 0
        self.changes += 1
        return gain

    def _choose(self) -> None:
        """Which filter's weights the foreground holds (see the module)."""
        if self._background_energy < COPY_RATIO * self._foreground_energy:
            self._better_blocks += 1
            if self._better_blocks >= COPY_BLOCKS:
                self._foreground[:] = self._background
                self._foreground_energy = self._background_energy
                self._better_blocks = 0
                self.changes += 1
            return
        self._better_blocks = 0
        if self._background_energy > RESET_RATIO * self._foreground_energy:
            self._background[:] = self._foreground
            self._background_energy = self._foreground_energy


def _smoothed(last: float, latest: float) -> float:
    """An energy smoothed over the last blocks (`ENERGY_SMOOTHING`)."""
    return ENERGY_SMOOTHING * last + (1 - ENERGY_SMOOTHING) * float(latest)


class PathStore(Protocol):
    """Where a stream's cancellers keep the path they learned across restarts
    (sori.hearing.audio.echo_path.EchoPathStore)."""

    def start(self, cancellers: Sequence[EchoCanceller]) -> bool: ...

    def keep(self, cancellers: Sequence[EchoCanceller]) -> None: ...

    def finish(self, cancellers: Sequence[EchoCanceller]) -> None: ...


def cancel_echo(
    frames: Iterable[AudioFrame],
    played: PlayedAudio,
    origin_ns: int,
    canceller: EchoCanceller | None = None,
    store: PathStore | None = None,
) -> Iterator[AudioFrame]:
    """`frames` (a stream starting at clock time `origin_ns`) without what `played` says
    the speaker played at their times; with `canceller` (its block one frame) it goes on
    from what it learned, else one is made for the stream, starting from the path `store`
    kept, which keeps what it learns at the end of every reply."""
    for frame in frames:
        start, end = origin_ns + frame.start_ns, origin_ns + frame.end_ns
        if canceller is None:
            canceller = EchoCanceller(len(frame.pcm) // 2)
            if store is not None:
                store.start([canceller])
        elif not canceller.active and not played.speaking(end):
            yield frame  # Sori has been silent for longer than the filter reaches
            continue
        reference = np.frombuffer(played.between(start, end), "<i2")
        mic = np.frombuffer(frame.pcm, "<i2").astype(np.float64)
        cleaned = canceller.process(mic, reference.astype(np.float64))
        if cleaned is None:
            if store is not None:
                store.keep([canceller])  # the reply and its echo are over
            yield frame
        else:
            removed = mic - cleaned
            pcm = np.clip(np.rint(cleaned), -32768, 32767).astype("<i2").tobytes()
            yield AudioFrame(pcm, frame.start_ns, float(removed @ removed))
    if store is not None and canceller is not None:
        store.finish([canceller])  # the stream ended (a stop), perhaps during a reply
