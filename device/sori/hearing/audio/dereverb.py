"""Dereverberation: the room's late echo taken out of each microphone, as it streams.

Across a room the microphone hears a talker's words, then the walls repeat them for as
long as the reverberation time (RT60, 0.3-0.8 s in a home). The recognizer hears each
syllable smeared over the next ones. Two ways to take that tail out share one streaming
short-time spectrum (`OverlapAdd`): WPE learns the room, spectral suppression models it.

Weighted prediction error (WPE, `OnlineWpe`) removes the tail:
in each frequency of a short-time spectrum, the late reverberation of now is predicted
from what the microphones heard `taps` frames, from `delay + 2` frames ago back (nara-wpe's
OnlineWPE counts `delay` so), and subtracted. The frames closest to now are left alone
(40 ms at the defaults, past the three frames that overlap the current one), so the direct
sound and its early reflections (which the ear and the recognizer hear as the voice
itself) are kept: measured on a simulated room, a delay of 1 frame instead of 3 leaves the
voice more smeared than no dereverberation at all.

Online WPE (Yoshioka and Nakatani 2012; the same recursion, to rounding, as nara-wpe's
`OnlineWPE.step_frame`, in numpy alone) adapts the prediction filter by recursive least
squares, each frame weighted by the inverse of its power: quiet frames, where the voice is
absent, say little about the room. `alpha` is the forgetting factor, how much of the past
the estimate keeps each frame (0.9999: a memory of many seconds; a room's acoustics change
slowly). With several channels each is predicted from all of them, so the filter also uses
the array's spatial view; with one channel it works on that channel alone. Digital
silence (a muted microphone) leaves the filter as it was.

The work is vectorised over the frequencies; per frame it is O(F * (channels * taps)^2).
Measured on one x86 core, seconds of CPU per second of audio: 0.024 for one channel,
0.065 for two, 0.24 for four, 0.69 for six (docs/hearing.md). With one microphone 20
taps instead of 10 took the recognizer's CER at 2 m, RT60 0.4 s, from 0.65 to 0.59 (0.69
without), at four times the cost. Blocks of any length go in; the spectrum is taken
every `hop` samples over `frame` samples, and what comes out is the input delayed by
`latency` samples (one STFT frame, 32 ms at 16 kHz: the overlap-add's frame less a hop,
and a hop of buffering).

    wpe = OnlineWpe(channels=4)
    for block in capture:            # float32, (frames, 4)
        clean = wpe.process(block)   # float32, (frames, 4), 32 ms later

Spectral suppression (`LateReverbSuppressor`; Lebart 2001, Habets 2009) learns nothing: a
room of reverberation time RT60 leaves 10^(-6 t / RT60) of a sound's power t seconds
after it, so the late reverberation in each frequency now is that share (t = `EARLY_S`,
past the direct sound and its first reflections) of the smoothed power heard then, and
each frequency is scaled down by what is left of its power after it (at most
`GAIN_FLOOR_DB`). It works from a command's first syllable, which is where WPE loses: 2 m
away in a room of RT60 0.4 s it took the commands heard from 8 to 15 of 40 (WPE: 7), at
0.004 of a core. It also takes some of close speech's sustained sound for reverberation
(a read sentence's CER 0.173 to 0.230), so it is for a device talked to from across a
room (docs/hearing.md). With an array, one gain per frequency serves every channel, from
their mean power: the channels keep their phases and ratios for the beam.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

FRAME_S = 0.032
"""Length of one STFT frame in seconds (512 samples at 16 kHz): long enough to resolve
the voice's harmonics, as the WPE literature and nara-wpe use it."""
HOPS_PER_FRAME = 4
"""Frames overlap by three quarters (a hop of 128 samples at 16 kHz)."""
RESCALE_ABOVE = 1e6
"""A scale of the inverse covariance past this is multiplied in (after about 18 minutes
of sound at alpha 0.9999), far from overflowing."""
POWER_FLOOR = 1e-10
"""Power (float scale, squared) below which a frequency counts as silent: digital silence,
which neither divides by zero nor adapts the filter."""
EARLY_S = 0.05
"""The spectral suppressor leaves the direct sound and the reflections of its first 50 ms
alone (the C50 boundary): the ear and the recognizer hear them as the voice."""
GAIN_FLOOR_DB = -12.0
"""The most the spectral suppressor takes off a frequency: deeper cuts leave holes the
recognizer hears as other sounds."""
PSD_SMOOTHING = 0.6
"""How much of its last value the suppressor's power estimate keeps each hop (8 ms)."""


class OverlapAdd:
    """A streaming short-time spectrum: blocks of samples in, each hop's spectrum (of the
    latest `frame` samples, under a square-root Hann window) through a function, and the
    function's spectra back to samples by overlap-add, `latency` samples later."""

    def __init__(self, channels: int, frame: int) -> None:
        self.channels = channels
        self.frame = frame
        self.hop = frame // HOPS_PER_FRAME
        self.latency = frame
        """Samples between a sample going in and its processed self coming out."""
        periodic = np.sin(np.pi * np.arange(frame) / frame)  # sqrt of a Hann
        self._analysis = periodic[:, None]
        self._synthesis = periodic[:, None] / (HOPS_PER_FRAME / 2)  # the overlap sums to 1
        self._input = np.zeros((frame, channels))
        """The latest `frame` samples in, for the next spectrum."""
        self._pending = np.zeros((0, channels))
        """Samples in that have not yet made a hop."""
        self._overlap = np.zeros((frame, channels))
        """Output frames overlapping, added up; its first hop is complete each frame."""
        self._output = np.zeros((self.hop, channels))
        """Samples out, ready; it starts with a hop of silence so that a block shorter
        than a hop has something to return: that hop and the overlap-add's frame less a
        hop are the latency."""

    def process(
        self, block: np.ndarray, per_frame: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """`block` (float, shape (frames, channels)) with each spectrum (bins, channels)
        replaced by `per_frame` of it, `latency` samples later; float32 of the same shape."""
        block = np.asarray(block, dtype=np.float64)
        if block.ndim != 2 or block.shape[1] != self.channels:
            raise ValueError(f"block must be (frames, {self.channels}), got {block.shape}")
        pending = np.concatenate([self._pending, block])
        hops = len(pending) // self.hop
        ready = [self._output]
        for k in range(hops):
            ready.append(self._step(pending[k * self.hop : (k + 1) * self.hop], per_frame))
        self._pending = pending[hops * self.hop :]
        out = np.concatenate(ready)
        self._output = out[len(block) :]
        return out[: len(block)].astype(np.float32)

    def _step(self, hop: np.ndarray, per_frame: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """One hop of samples in, one hop of processed samples out."""
        self._input[: -self.hop] = self._input[self.hop :]
        self._input[-self.hop :] = hop
        spectrum = np.fft.rfft(self._input * self._analysis, axis=0)  # (bins, channels)
        processed = per_frame(spectrum)
        self._overlap[: -self.hop] = self._overlap[self.hop :]
        self._overlap[-self.hop :] = 0.0
        self._overlap += np.fft.irfft(processed, self.frame, axis=0) * self._synthesis
        return self._overlap[: self.hop].copy()


def frame_samples(sample_rate: int) -> int:
    """The STFT frame in samples: `FRAME_S`, rounded to a power of two."""
    return 1 << round(np.log2(FRAME_S * sample_rate))


class OnlineWpe:
    """Streaming multichannel WPE dereverberation (see the module)."""

    def __init__(
        self,
        channels: int,
        sample_rate: int = 16000,
        taps: int = 10,
        delay: int = 3,
        alpha: float = 0.9999,
    ) -> None:
        if channels < 1 or taps < 1 or delay < 1:
            raise ValueError(f"channels, taps, delay must be >= 1: {channels}, {taps}, {delay}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha (the forgetting factor) must be in (0, 1], got {alpha}")
        self.channels = channels
        self.taps = taps
        self.delay = delay
        self.alpha = alpha
        self._stft = OverlapAdd(channels, frame_samples(sample_rate))
        self.latency = self._stft.latency
        """Samples between a sample going in and its dereverberated self coming out."""
        bins = self._stft.frame // 2 + 1
        order = channels * taps
        self._newest_used = delay + 2
        """How many frames back the newest frame the prediction uses is: nara-wpe's
        OnlineWPE counts `delay` so (5 at the default, clear of the 3 frames that overlap
        the current one)."""
        self._past = np.zeros((self._newest_used + taps - 1, bins, channels), np.complex128)
        """Spectra of the latest frames, newest first, that predict the reverberation."""
        self._past_power = np.zeros((delay + taps, bins))
        """Power of the latest frames averaged over the channels: with the current frame's
        it makes the frame's weight (nara-wpe's span)."""
        self._inverse_covariance = np.tile(np.eye(order, dtype=np.complex128), (bins, 1, 1))
        """Per bin, the RLS inverse covariance divided by `_scale` (bins, order, order)."""
        self._scale = np.ones(bins)
        """Each bin's forgetting (1/alpha a frame) kept as a number, not applied to the
        whole matrix every frame, until it passes `RESCALE_ABOVE`."""
        self._outer = np.empty_like(self._inverse_covariance)
        """Room for each frame's update of the inverse covariance, made once."""
        self._filter_conj = np.zeros((bins, order, channels), np.complex128)
        """The prediction filter, conjugated: (bins, channels * taps, channels)."""

    def process(self, block: np.ndarray) -> np.ndarray:
        """`block` (float, shape (frames, channels)) dereverberated, `latency` samples
        later; float32 of the same shape."""
        return self._stft.process(block, self._predict_and_adapt)

    def _predict_and_adapt(self, spectrum: np.ndarray) -> np.ndarray:
        """The current frame's spectrum less its predicted late reverberation, then one
        recursive least squares step of the prediction filter (nara-wpe's recursion)."""
        bins = spectrum.shape[0]
        # what was heard `taps` frames from `_newest_used` back: (bins, channels * taps)
        window = self._past[self._newest_used - 1 :].transpose(1, 2, 0).reshape(bins, -1)
        cleaned = spectrum - (window[:, None, :] @ self._filter_conj)[:, 0, :]
        power_now = np.mean(np.abs(spectrum) ** 2, axis=1)
        power = (power_now + self._past_power.sum(axis=0)) / (len(self._past_power) + 1)
        # a silent span (a muted microphone) teaches nothing, and forgetting without
        # learning would grow the inverse covariance without bound
        heard = power > POWER_FLOOR
        unscaled = (self._inverse_covariance @ window[:, :, None])[:, :, 0]
        projected = self._scale[:, None] * unscaled
        denominator = self.alpha * power + np.einsum("fi,fi->f", window.conj(), projected).real
        gain = np.where(
            heard[:, None], projected / np.maximum(denominator, POWER_FLOOR)[:, None], 0
        )
        # P' = (P - gain (P window)^H) / alpha; P is Hermitian and scale * the array
        np.multiply(gain[:, :, None], unscaled.conj()[:, None, :], out=self._outer)
        self._inverse_covariance -= self._outer
        self._scale[heard] /= self.alpha
        if self._scale.max() > RESCALE_ABOVE:
            self._inverse_covariance *= self._scale[:, None, None]
            self._scale[:] = 1.0
        self._filter_conj += gain.conj()[:, :, None] * cleaned[:, None, :]
        self._past[1:], self._past_power[1:] = self._past[:-1], self._past_power[:-1]
        self._past[0], self._past_power[0] = spectrum, power_now
        return cleaned


def late_share(rt60_s: float, after_s: float) -> float:
    """What of a sound's power is still in a room of reverberation time `rt60_s` (60 dB
    of decay) `after_s` after it stopped."""
    return float(10 ** (-6 * after_s / rt60_s))


class LateReverbSuppressor:
    """Streaming spectral suppression of late reverberation (see the module)."""

    def __init__(
        self,
        channels: int,
        rt60_s: float,
        sample_rate: int = 16000,
        early_s: float = EARLY_S,
        floor_db: float = GAIN_FLOOR_DB,
        smoothing: float = PSD_SMOOTHING,
    ) -> None:
        if channels < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        if rt60_s <= 0:
            raise ValueError(f"rt60_s (the room's reverberation time) must be > 0, got {rt60_s}")
        self.channels = channels
        self.rt60_s = rt60_s
        self._stft = OverlapAdd(channels, frame_samples(sample_rate))
        self.latency = self._stft.latency
        """Samples between a sample going in and its dereverberated self coming out."""
        hop_s = self._stft.hop / sample_rate
        self._early_hops = max(1, round(early_s / hop_s))
        early_s = self._early_hops * hop_s
        self._late_share = late_share(rt60_s, early_s)
        """What of the power heard `early_s` ago is still in the room now."""
        bins = self._stft.frame // 2 + 1
        self._least_power_gain = 10 ** (floor_db / 10)
        self._smoothing = smoothing
        self._power = np.zeros(bins)
        """The smoothed power of the latest frames, averaged over the channels."""
        self._history = np.zeros((self._early_hops, bins))
        """`_power` of the last `_early_hops` frames, a ring: the oldest is the next out."""
        self._at = 0

    def process(self, block: np.ndarray) -> np.ndarray:
        """`block` (float, shape (frames, channels)) dereverberated, `latency` samples
        later; float32 of the same shape."""
        return self._stft.process(block, self._suppress)

    def _suppress(self, spectrum: np.ndarray) -> np.ndarray:
        """The frame with each frequency scaled down by its share of late reverberation,
        one gain for every channel (an array's beam sees the same voice, only quieter)."""
        power_now = np.mean(spectrum.real**2 + spectrum.imag**2, axis=1)
        self._power *= self._smoothing
        self._power += (1 - self._smoothing) * power_now
        late = self._late_share * self._history[self._at]  # before the ring moves on
        self._history[self._at] = self._power
        self._at = (self._at + 1) % self._early_hops
        left = 1.0 - late / np.maximum(power_now, POWER_FLOOR)
        gain = np.sqrt(np.maximum(left, self._least_power_gain))
        return spectrum * gain[:, None]
