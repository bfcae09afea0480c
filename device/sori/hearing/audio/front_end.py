"""The front end of a microphone array: N channels in, one pipeline stream out.

In the order sound meets it: Sori's own voice taken out of each channel (echo
cancellation, while the speaker plays), dereverberation (`audio.dereverb`, from
sori.hearing.audio.dereverb), the beam, and back to 16 kHz mono s16le
frames, which the voice detector, the wake detector and the recognizer hear as they
would hear one microphone. With one microphone none of this runs (`audio.channels = 1`),
except dereverberation when asked for (`dereverbed`).

The beam works on a short-time spectrum (`FFT_SIZE` points, a hop of `HOP`, square-root
Hann windows, which overlap-add back to the signal): every hop, each bin's channels are
weighted and summed. Its output is `FFT_SIZE` samples (32 ms) behind its input; the
frames keep their stream times.

Before any of it, a `ChannelWatch` (sori.hearing.audio.channel_health) listens to every
channel: a microphone that carries no sound is left out, one many decibels louder or
softer than the rest is evened out, and the direction and the beam are learnt again on
what is left (`live`), with a warning that says what to check on the board.

The voice detector steers it. After each frame the pipeline tells it what the detector
made of it (`ArrayFrontEnd.heard`):

- between utterances, in quiet (no voice for `QUIET_MS`), each spectrum updates the noise
  covariance, which MVDR nulls;
- while voice is heard (and stands clear of the noise), the spectra gather into the
  speech covariance, and every `SEARCH_EVERY` of them the direction is found again and
  the beam turned there, so the start of an utterance is already heard through it;
- once an utterance has started and `HOLD_HOPS` voiced spectra are gathered, the
  direction is found on all of them and the beam is held there until the utterance ends
  (`direction_deg`, which the pipeline puts on `SpeechStarted`, as found so far, and on
  `UtteranceHeard`).

The detector's word on a frame comes a frame after the frame and the beam's delay, so the
statistics are kept from spectra `DELAY_HOPS` hops old, which the word covers.

A television talks for minutes from one place, and the detector calls it voice: no quiet
comes, and its babble would take the direction. Every spectrum not taken as the talker's
also goes to a `StandingSource` (sori.hearing.audio.standing), which finds such a source
by its holding one direction for seconds. While one stands:

- its covariance is the noise: MVDR nulls it, the direction search subtracts it and looks
  for the talker at least `AVOID_DEG` away, and a voiced spectrum must stand over it;
- between utterances the beam looks straight up with the null on it (no azimuth
  preferred, so a talker anywhere else is heard);
- `clear` says whether the frame just beamed stands `CLEAR_DB` over what is left of the
  source in the beam (its level, tracked in dB): the pipeline's voice detector hears only
  such frames, so the babble opens no utterance and the talker's voice does.

A television that was on when an utterance began holds the beam instead. While it is
held, a `Takeover` (sori.hearing.audio.takeover) watches for a louder talker elsewhere;
one found turns the beam to them with MVDR's null on what it held, and counts in
`takeovers`, on which the pipeline gives them an utterance of their own. By then the
beam is sure of them, but their first words went through the beam that held the
television: the front end keeps the last `REBEAM_S` of spectra, and `rebeam` gives the
pipeline that stretch again, beamed as it points now.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import numpy as np

from sori.hearing.audio.array import (
    ArrayGeometry,
    ChannelLayout,
    DirectionFinder,
    delay_and_sum,
    mvdr,
    outer,
    power,
    steering,
)
from sori.hearing.audio.channel_health import ChannelChange, ChannelWatch
from sori.hearing.audio.echo_cancel import TAPS_MS, EchoCanceller, PathStore
from sori.hearing.audio.format import (
    RATE_HZ,
    AudioFrame,
    ChannelFrame,
    float_to_s16,
    s16_to_float,
)
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.audio.standing import ROOM_S, StandingSource
from sori.hearing.audio.takeover import Takeover

FFT_SIZE = 512
"""Points of the short-time spectrum (32 ms at 16 kHz: room echoes within it are one
bin's phase, what a far-field beam assumes)."""
HOP = FFT_SIZE // 2
"""Samples between spectra (half a window: square-root Hann windows add back to one)."""
QUIET_MS = 100
"""Voice-free time before spectra count as noise: the detector's verdict lags the sound,
and a syllable in the noise covariance would make MVDR null the talker."""
NOISE_SMOOTHING = 0.98
"""Share of the noise covariance kept at each hop (a time constant of about 0.8 s)."""
MIN_NOISE_HOPS = 8
"""Noise spectra needed before MVDR trusts the covariance; before, delay-and-sum."""
SEARCH_EVERY = 4
"""Voiced spectra between estimates of the direction before an utterance starts."""
MIN_VOICED_HOPS = 4
"""Voiced spectra needed for a first estimate (64 ms of speech)."""
HOLD_HOPS = 24
"""Voiced spectra the utterance's direction is found on before the beam is held (about
0.4 s of speech: fewer, and the room's echoes pull it off by tens of degrees)."""
SPEECH_OVER_NOISE = 2.0
"""Power a voiced spectrum needs over the noise's, in the direction's band, to count
towards the direction (3 dB)."""
MVDR_BELOW_SNR_DB = 25.0
"""MVDR only where there is noise to null: a voice this far over the noise the room made
between utterances gets delay-and-sum. In a quiet room the noise estimate holds little
but the voice's own reverberant tail, and MVDR nulls the talker with it (a simulated
room, RT60 0.4 s, 4 clips: CER 0.76 against delay-and-sum's 0.48; with pink noise 5 dB
under the talker MVDR's 0.63 against 0.84)."""
FORGET_MS = 500
"""Quiet after which voice heard outside an utterance (a cough, a door) is forgotten."""
DELAY_HOPS = 4
"""Age of the spectra the statistics are kept from, in hops: the detector's verdict on
a frame covers audio `FFT_SIZE` plus a frame old (see the module)."""
CLEAR_DB = 8.0
"""How far a beamed spectrum must stand over what is left of a standing source in the
beam, in dB, for the voice detector to hear it. Babble's own peaks stand 6 dB over its
level for as long as an utterance needs to start (at 6 dB, two of four simulated rooms
opened utterances on the television after it stood); at 9 dB a talker 5 dB over the
television at the microphones had a soft stretch of a sentence cut off."""
RESIDUAL_SLOWER = 10.0
"""How much more slowly the level left of a standing source follows spectra that stand
clear of it (a talker's) than the rest: a command barely moves it, a television turned
up still pulls it up in seconds."""
REBEAM_S = 2.0
"""How much of the stream the front end keeps as spectra, to beam it again towards a
talker who took the beam over (`rebeam`): the pipeline looks back up to 1.8 s."""
BEAMS = ("mvdr", "delay-sum", "off")

log = logging.getLogger(__name__)


class Dereverberator(Protocol):
    """What `audio.dereverb` runs (sori.hearing.audio.dereverb: OnlineWpe or
    LateReverbSuppressor)."""

    def process(self, block: np.ndarray) -> np.ndarray:
        """`block`, float32 shaped (samples, channels), without its late reverberation."""
        ...


class ArrayFrontEnd:
    """Direction finding and the beam for one stream of an array (see the module).
    Not thread-safe: the audio loop calls `process` and `heard` in turn."""

    def __init__(
        self, geometry: ArrayGeometry, beamform: str = "mvdr", layout: ChannelLayout | None = None
    ) -> None:
        if beamform not in BEAMS:
            raise ValueError(f"beamform must be one of {', '.join(BEAMS)}, got {beamform!r}")
        self.geometry = geometry
        """All the array's microphones, in channel order (the beam uses the live ones)."""
        self.layout = layout or ChannelLayout(geometry.channels, tuple(range(geometry.channels)))
        """Which captured channels are the microphones, and which the board's playback:
        `array_frames` hands `process` the microphones' alone, in the positions' order."""
        self.beamform = beamform
        self.direction_deg: float | None = None
        """Azimuth of the talker of the current (or last) utterance, in degrees
        counter-clockwise from the array's +x axis; None before the first."""
        self._freqs = np.fft.rfftfreq(FFT_SIZE, 1 / RATE_HZ)
        self._window = np.sqrt(np.hanning(FFT_SIZE + 1)[:-1])  # periodic
        self._fresh = 0
        """Samples of the current hop already in the tail of `_input`."""
        self._overlap = np.zeros(FFT_SIZE)
        self._output = np.zeros(HOP)
        self._ready = HOP  # one hop of silence first: a frame never waits for a hop
        self._hops = 0
        self._frame_ms = 20.0
        self._voiced = False
        self._locked = False
        """An utterance is open: the beam is, or is about to be, held on its talker."""
        self._quiet_frames = 0
        self._hop_s = HOP / RATE_HZ
        self._residual_keep = float(np.exp(-self._hop_s / ROOM_S))
        self._hop_clear: bool | None = None
        self.clear = True
        """Whether the frame just processed stands clear of any standing source (see the
        module); always True while none stands."""
        self.takeovers = 0
        """How many times a louder talker elsewhere took the held beam over; the pipeline
        ends the utterance there and opens the new talker's."""
        self.takeover_lag_s = 0.0
        """How long before the end of the frame just processed the last takeover's talker
        began to be heard in the beam's output, in seconds."""
        self.holds = 0
        """How many times the beam was held on an utterance's talker; the pipeline hears
        the utterance so far again through the held beam (`rebeam`)."""
        self._watch: ChannelWatch | None = ChannelWatch(geometry.channels)
        self.live = self._watch.live
        """The microphones the beam listens with: those that carry sound
        (sori.hearing.audio.channel_health)."""
        self._channel_gains = np.ones(geometry.channels)
        """The gain each microphone is evened out by (1 where it needs none)."""
        self._gains: np.ndarray | None = None
        """The live microphones' gains, while some are not 1."""
        bins, channels = FFT_SIZE // 2 + 1, geometry.channels
        self._input = np.zeros((FFT_SIZE, channels))
        self._kept = np.zeros((round(REBEAM_S * RATE_HZ / HOP), bins, channels), np.complex64)
        """The last spectra, a ring, for `rebeam`."""
        self._recent = np.zeros((DELAY_HOPS, bins, channels), np.complex128)
        self._listen_with(geometry)

    def _listen_with(self, geometry: ArrayGeometry) -> None:
        """Direction finding and the beam's statistics for the microphones of `geometry`,
        learnt afresh; the beam on the first of them until there is a direction."""
        channels, bins = geometry.channels, FFT_SIZE // 2 + 1
        self._live_geometry = geometry
        self._finder = DirectionFinder(geometry, FFT_SIZE, RATE_HZ)
        self._noise = np.zeros((bins, channels, channels), np.complex128)
        self._noise_hops = 0
        self._speech = np.zeros((len(self._finder.band), channels, channels), np.complex128)
        self._voiced_hops = 0
        self._weights = np.zeros((bins, channels), np.complex128)
        self._weights[:, 0] = 1.0
        self._held = False
        """The beam is held on the open utterance's talker."""
        self._standing = StandingSource(self._finder, bins, channels, self._hop_s)
        self._residual_db: float | None = None
        """Level of what a standing source leaves in the beam, in dB."""
        self._zenith = steering(geometry, self._freqs, np.array([0.0, 0.0, 1.0]))
        self._takeover = Takeover(self._finder, bins, channels, self._hop_s)

    @property
    def standing_deg(self) -> float | None:
        """Direction of a standing source (a television), in degrees; None while none."""
        return self._standing.azimuth_deg

    @property
    def weights(self) -> np.ndarray:
        """The beam now: a weight per bin and microphone of the array (each bin's output
        is w^H x, x the microphones evened out; a microphone left out weighs 0)."""
        weights = np.zeros((len(self._freqs), self.geometry.channels), np.complex128)
        weights[:, self.live] = self._weights
        return weights

    def microphones(self) -> dict[str, Any]:
        """What the channel watch made of the array, for /health: the microphones the beam
        listens with, those left out, and the gain (dB) each evened-out one gets; and which
        captured channels are the microphones and the board's playback."""
        gains_db = 20 * np.log10(self._channel_gains)
        return {
            "channels": self.geometry.channels,
            "mic_channels": list(self.layout.microphones),
            "playback_channels": list(self.layout.playback),
            "live": list(self.live),
            "left_out": [c for c in range(self.geometry.channels) if c not in self.live],
            "evened_db": {str(c): round(float(gains_db[c]), 1) for c in self.live if gains_db[c]},
        }

    def fix(self, weights: np.ndarray) -> None:
        """Hold the beam at `weights` (per bin and microphone of the array) from now on,
        whatever is heard (with beamform "off", which steers nothing): a measurement
        applies one beam to each part of a mix; the microphones stay as they are."""
        self._weights = np.array(weights, np.complex128)[:, self.live]
        self._watch = None

    # -- the stream -------------------------------------------------------------------------

    def process(self, block: np.ndarray) -> np.ndarray:
        """One frame of every channel (float, shaped (samples, channels)) → as many mono
        float samples of the beam's output, `FFT_SIZE` samples later."""
        change = self._watch.hear(block) if self._watch is not None else None
        if change is not None:
            self._adapt(change)
        if self._gains is not None:
            block = block[:, self.live] * self._gains
        elif len(self.live) < self.geometry.channels:
            block = block[:, self.live]
        n = len(block)
        self._frame_ms = n * 1000 / RATE_HZ
        self._hop_clear = None
        taken = 0
        while taken < n:
            step = min(HOP - self._fresh, n - taken)
            start = FFT_SIZE - HOP + self._fresh
            self._input[start : start + step] = block[taken : taken + step]
            self._fresh += step
            taken += step
            if self._fresh == HOP:
                self._hop()
                self._fresh = 0
        if self._hop_clear is not None:
            self.clear = self._hop_clear
        out = self._output[:n].copy()
        self._ready -= n
        self._output[: self._ready] = self._output[n : n + self._ready]
        return out

    def _adapt(self, change: ChannelChange) -> None:
        """Listen with the microphones `change` finds live, at the gains it finds, from
        now on: the buffered audio narrowed to them and evened out, direction and beam
        learnt again on them alone."""
        self._report(change)
        gains = 10 ** (np.array(change.gains_db) / 20)
        kept = [self.live.index(c) if c in self.live else None for c in change.live]
        scale = gains[list(change.live)] / self._channel_gains[list(change.live)]
        self._input = narrowed(self._input, kept, scale, axis=1)
        self._kept = narrowed(self._kept, kept, scale, axis=2)
        self._recent = narrowed(self._recent, kept, scale, axis=2)
        self.live, self._channel_gains = change.live, gains
        uneven = any(change.gains_db[c] for c in self.live)
        self._gains = gains[list(self.live)] if uneven else None
        self._listen_with(ArrayGeometry(self.geometry.positions_m[list(self.live)]))
        if self._locked:
            self.direction_deg = None  # found on microphones or levels it no longer has

    def _report(self, change: ChannelChange) -> None:
        """Tell the person who set the board up what `change` did, and what to check."""
        name = self.layout.channel_name
        for channel in sorted(set(self.live) - set(change.live)):
            log.warning(
                "%s of the array carries no sound (%s): left out of the beam; "
                "check the board's driver and wiring", name(channel), change.describe(channel),
            )  # fmt: skip
        for channel in sorted(set(change.live) - set(self.live)):
            log.warning("%s of the array carries sound again: back in the beam", name(channel))
        before = 20 * np.log10(self._channel_gains)
        for channel in change.live:
            gain_db = change.gains_db[channel]
            if gain_db and abs(gain_db - before[channel]) > 0.05:
                log.warning(
                    "%s of the array is %.0f dB %s than the others: evened out; "
                    "check its gain in the mixer (alsamixer)",
                    name(channel), abs(gain_db), "louder" if gain_db < 0 else "quieter",
                )  # fmt: skip

    def _hop(self) -> None:
        spectrum = np.fft.rfft(self._input * self._window[:, None], axis=0)
        self._input[: FFT_SIZE - HOP] = self._input[HOP:]
        self._kept[self._hops % len(self._kept)] = spectrum  # `_learn` counts the hop
        self._learn(spectrum)
        beamed = np.einsum("fm,fm->f", self._weights.conj(), spectrum)
        clear = self._stands_clear(beamed) if self._standing.present else True
        self._hop_clear = clear or bool(self._hop_clear)
        self._overlap += np.fft.irfft(beamed, FFT_SIZE) * self._window
        self._emit(self._overlap[:HOP])
        self._overlap[: FFT_SIZE - HOP] = self._overlap[HOP:]
        self._overlap[FFT_SIZE - HOP :] = 0.0

    def rebeam(self, samples: int) -> bytes:
        """The last `samples` samples `process` gave out, as the beam now would have made
        them, as the pipeline hears them (s16le); fewer when it keeps less (`REBEAM_S`)."""
        kept = min(self._hops, len(self._kept))
        order = (np.arange(kept) + self._hops - kept) % len(self._kept)
        beamed = np.einsum("fm,hfm->hf", self._weights.conj(), self._kept[order])
        frames = np.fft.irfft(beamed, FFT_SIZE, axis=1) * self._window
        # each hop given out is the late half of one frame and the early half of the next
        hops = frames[:-1, HOP:] + frames[1:, :HOP]
        stream = hops.reshape(-1)
        stream = stream[: len(stream) - self._ready]  # made, not yet given out
        return float_to_s16(stream[max(0, len(stream) - samples) :])

    def _emit(self, samples: np.ndarray) -> None:
        if self._ready + len(samples) > len(self._output):
            grown = np.zeros(2 * (self._ready + len(samples)))
            grown[: self._ready] = self._output[: self._ready]
            self._output = grown
        self._output[self._ready : self._ready + len(samples)] = samples
        self._ready += len(samples)

    def _stands_clear(self, beamed: np.ndarray) -> bool:
        """Whether one beamed spectrum stands `CLEAR_DB` over the level a standing source
        leaves in the beam; the level follows it (slowly where it stands clear)."""
        power = float(np.sum(np.abs(beamed[self._finder.band]) ** 2))
        level_db = 10 * np.log10(power + 1e-20)
        if self._residual_db is None:
            self._residual_db = level_db
        clear = level_db >= self._residual_db + CLEAR_DB
        if not self._talker_held():
            keep = self._residual_keep
            if clear:
                keep = 1 - (1 - keep) / RESIDUAL_SLOWER
            self._residual_db = keep * self._residual_db + (1 - keep) * level_db
        return clear

    # -- what the voice detector says -------------------------------------------------------

    def heard(self, voiced: bool, in_speech: bool) -> None:
        """The voice detector's verdict on the frame it just scored: whether it was voice,
        and whether an utterance is open. An utterance that opens locks the beam on the
        talker (`direction_deg`); one that closes frees it."""
        self._voiced = voiced
        self._quiet_frames = 0 if voiced or in_speech else self._quiet_frames + 1
        if in_speech and not self._locked:
            self._locked = True
            if self._voiced_hops >= HOLD_HOPS:
                self._hold()
        elif not in_speech and self._locked:
            self._locked = self._held = False
            self._forget_speech()
            if self._standing.present:
                self._idle()
        elif self._quiet_frames * self._frame_ms >= FORGET_MS and self._voiced_hops:
            self._forget_speech()

    def _learn(self, spectrum: np.ndarray) -> None:
        """Keep `spectrum` for `DELAY_HOPS` hops; the one it replaces, which the detector's
        verdict now covers, joins the noise or the speech statistics."""
        slot = self._hops % DELAY_HOPS
        self._hops += 1
        old = self._recent[slot].copy()
        self._recent[slot] = spectrum
        if self._hops <= DELAY_HOPS or len(self.live) < 2:
            return  # one microphone left has no direction to find
        talker = self._talker_held()
        covariance = outer(old)  # once a hop, for every statistic the spectrum joins
        if self._held:
            found = self._takeover.hear(old, covariance, self._voiced, self._standing.allowed)
            if found is not None:
                self._take_over(found)
        if not self._held:
            if self._quiet_frames * self._frame_ms >= QUIET_MS and not self._locked:
                self._noise *= NOISE_SMOOTHING
                self._noise += (1 - NOISE_SMOOTHING) * covariance
                self._noise_hops += 1
            elif self._voiced:
                talker = self._gather(covariance[self._finder.band])
        if not talker and self._standing.hear(covariance, self._voiced) and not self._locked:
            self._idle()  # a standing source came, went or moved: null it between utterances

    def _gather(self, band: np.ndarray) -> bool:
        """Take a voiced spectrum's covariance (bins of the direction's band) as the
        talker's when it stands over the noise, and steer by it; whether it was taken."""
        if not self._above_noise(band):
            return False
        self._speech += band
        self._voiced_hops += 1
        if self._locked and self._voiced_hops >= HOLD_HOPS:
            self._hold()  # the utterance opened before enough voice was gathered
        elif self._voiced_hops >= MIN_VOICED_HOPS and self._voiced_hops % SEARCH_EVERY == 0:
            self._steer(self._locate())
        return True

    def _talker_held(self) -> bool:
        """Whether the beam is held on a talker, not on a standing source (or one that
        may become one: a television's first utterance holds the beam on it)."""
        return (
            self._held and self.direction_deg is not None
            and not self._standing.near(self.direction_deg)
        )  # fmt: skip

    def _noise_now(self) -> np.ndarray | None:
        """The noise covariance the beam and the direction search work against: a standing
        source's room while one stands, else the quiet's once learnt; None before."""
        if self._standing.present:
            return self._standing.covariance
        return self._noise if self._noise_hops >= MIN_NOISE_HOPS else None

    def _above_noise(self, band: np.ndarray) -> bool:
        """Whether a voiced spectrum's covariance (bins of the direction's band) is loud
        enough over the noise to tell where the talker is: a quiet syllable's tail in the
        noise points at the noise."""
        noise = self._noise_now()
        if noise is None:
            return True
        return power(band) >= SPEECH_OVER_NOISE * power(noise[self._finder.band])

    def _hold(self) -> None:
        """Find the talker on all the voice gathered and hold the beam there."""
        self._steer(self._locate())
        self._held = True
        self.holds += 1
        self._takeover.start(self.direction_deg or 0.0, self._speech_power())

    def _take_over(self, found: int) -> None:
        """A louder talker elsewhere took over the held beam (sori.hearing.audio.takeover):
        turn to them, with MVDR's null on what the beam held until now."""
        self.direction_deg = float(self._finder.azimuth_deg[found])
        self.takeovers += 1
        look = steering(self._live_geometry, self._freqs, self._finder.directions[found])
        onset = self._takeover.onset_hops(look[self._finder.band])
        # the statistics' spectra are DELAY_HOPS old, and the output is a window late
        self.takeover_lag_s = (onset + DELAY_HOPS) * HOP / RATE_HZ
        if self.beamform != "off":
            noise = self._takeover.held
            quiet = self._noise_now()
            if quiet is not None:
                noise = noise + quiet
            use_mvdr = self.beamform == "mvdr" and power(noise) > 0
            self._weights = mvdr(look, noise) if use_mvdr else delay_and_sum(look)

    def _forget_speech(self) -> None:
        self._speech[:] = 0.0
        self._voiced_hops = 0

    # -- direction and beam -----------------------------------------------------------------

    def _locate(self) -> int:
        """The grid direction of the voice gathered so far (less the noise, once known;
        away from a standing source)."""
        noise = self._noise_now()
        band = None if noise is None else noise[self._finder.band]
        found = self._finder.find(self._speech / self._voiced_hops, band, self._standing.allowed)
        self.direction_deg = float(self._finder.azimuth_deg[found])
        return found

    def _steer(self, direction: int) -> None:
        if self.beamform == "off":
            return
        look = steering(self._live_geometry, self._freqs, self._finder.directions[direction])
        noise = self._noise_now()
        if self.beamform == "mvdr" and noise is not None and self._noisy(noise):
            self._weights = mvdr(look, noise)
        else:
            self._weights = delay_and_sum(look)

    def _idle(self) -> None:
        """The beam between utterances while a standing source stands: straight up, with
        MVDR's null on the source (delay-and-sum has no null to give: it keeps its
        beam). Once none stands, the first microphone again, as before any talker."""
        if not self._standing.present:
            self._residual_db = None
            if self.beamform != "off":
                self._weights[:] = 0.0
                self._weights[:, 0] = 1.0
            return
        if self.direction_deg is not None and self._standing.near(self.direction_deg):
            self.direction_deg = None  # the television's first utterance held it
        if self.beamform == "mvdr":
            self._weights = mvdr(self._zenith, self._standing.covariance)

    def _noisy(self, noise: np.ndarray) -> bool:
        """Whether `noise` is within MVDR_BELOW_SNR_DB of the voice gathered."""
        if not self._voiced_hops:
            return False
        level = power(noise[self._finder.band])
        voice = max(self._speech_power() - level, 0.0)
        return voice < level * 10 ** (MVDR_BELOW_SNR_DB / 10)

    def _speech_power(self) -> float:
        """Mean band power of the voiced spectra gathered (at least one)."""
        return power(self._speech) / self._voiced_hops


def narrowed(
    spectra: np.ndarray, kept: list[int | None], scale: np.ndarray, axis: int
) -> np.ndarray:
    """`spectra` with only the channels `kept` names along `axis`, in that order, each
    multiplied by its `scale`; None stands for a channel that comes back, which starts
    silent."""
    shape = list(spectra.shape)
    shape[axis] = len(kept)
    out = np.zeros(shape, spectra.dtype)
    for to, channel in enumerate(kept):
        if channel is not None:
            np.moveaxis(out, axis, 0)[to] = np.moveaxis(spectra, axis, 0)[channel] * scale[to]
    return out


def array_frames(
    frames: Iterable[ChannelFrame],
    array: ArrayFrontEnd,
    played: PlayedAudio | None = None,
    origin_ns: int = 0,
    dereverb: Dereverberator | None = None,
    loopback: bool = False,
    echo_store: PathStore | None = None,
) -> Iterator[AudioFrame]:
    """An array's frames (a stream from clock time `origin_ns`) as pipeline frames: the
    microphones' channels of each (`array.layout`), without the speaker's sound in any of
    them when `played` records what it plays or, with `loopback`, when the board captures
    its own playback (the cancellers starting from the paths `echo_store` kept);
    dereverberated when `dereverb` is given, beamed by `array`."""
    layout = array.layout
    playback = layout.playback if loopback else ()
    echo = None
    if played is not None or playback:
        echo = ChannelEchoCancel(played, origin_ns, playback, echo_store)
    microphones = None if layout.first_channels else list(layout.microphones)
    for frame in frames:
        captured = frame.samples
        block = captured if microphones is None else captured[:, microphones]
        echo_energy = 0.0
        if echo is not None:
            block, echo_energy = echo.cancel(block, frame)
        if dereverb is not None:
            block = dereverb.process(block)
        mono = array.process(block)
        yield AudioFrame(float_to_s16(mono), frame.start_ns, echo_energy)
    if echo is not None:
        echo.finish()  # the stream ended (a stop), perhaps during a reply


LOOPBACK_FLOOR = 10.0
"""RMS (int16 scale, about −70 dBFS) under which a board's playback channel is taken to
carry nothing: its converter's own noise is no echo to cancel, and once it has been this
quiet for as long as the filters reach, the cancellers rest."""
LOOPBACK_SILENT_S = 1.0
"""Sori's record sounding this long while the board's playback channel stays silent: Sori
plays through another output, and its record becomes the reference."""


class ChannelEchoCancel:
    """The speaker's sound taken out of every channel, a canceller each (as
    sori.hearing.audio.echo_cancel does for one microphone). The reference is the board's
    playback channels where it captures them: sampled with the microphones, they hold
    whatever the board plays, with no clock between them to drift. Else, or once they
    prove silent while Sori speaks, it is Sori's own record of what it played."""

    def __init__(
        self,
        played: PlayedAudio | None,
        origin_ns: int,
        playback: tuple[int, ...] = (),
        store: PathStore | None = None,
    ) -> None:
        self._played = played
        self._store = store
        """Where the cancellers' paths are kept across restarts (echo_path)."""
        self._sounded = False
        """Whether the last frame had a reference: its end is the end of a reply."""
        self._origin_ns = origin_ns
        self._playback = list(playback)
        self._silent_s = 0.0
        """How long Sori's record has sounded with the playback channels silent."""
        self._quiet_s = 0.0
        """How long the playback channels have been under `LOOPBACK_FLOOR`."""
        self._cancellers: list[EchoCanceller] = []

    def cancel(self, block: np.ndarray, frame: ChannelFrame) -> tuple[np.ndarray, float]:
        """The microphones' `block` of `frame` without the echo, and the echo energy taken
        from the first microphone (int16 scale, as `AudioFrame.echo_energy`)."""
        if not self._cancellers:
            self._cancellers = [EchoCanceller(len(block)) for _ in range(block.shape[1])]
            if self._store is not None:
                self._store.start(self._cancellers)
        reference = self._reference(frame)
        if reference is None:
            if self._sounded and self._store is not None:
                self._store.keep(self._cancellers)  # the reply and its echo are over
            self._sounded = False
            return block, 0.0  # nothing played for longer than the filters reach
        self._sounded = True
        cleaned = block.astype(np.float64) * 32768.0
        energy = 0.0
        for channel, canceller in enumerate(self._cancellers):
            mic = cleaned[:, channel].copy()
            out = canceller.process(mic, reference)
            if out is not None:
                cleaned[:, channel] = out
                if channel == 0:
                    removed = mic - out
                    energy = float(removed @ removed)
        return (cleaned / 32768.0).astype(np.float32), energy

    def finish(self) -> None:
        """The stream has ended: what the cancellers learned is kept (`store`)."""
        if self._store is not None and self._cancellers:
            self._store.finish(self._cancellers)

    def _reference(self, frame: ChannelFrame) -> np.ndarray | None:
        """What the speaker played during `frame` (float, int16 scale); None when neither
        it nor anything within the filters' reach sounded."""
        active = self._cancellers[0].active
        start, end = self._origin_ns + frame.start_ns, self._origin_ns + frame.end_ns
        if self._playback:
            loop = frame.samples[:, self._playback].mean(axis=1).astype(np.float64) * 32768.0
            if np.sqrt(np.mean(loop**2)) >= LOOPBACK_FLOOR:
                self._silent_s, self._quiet_s = 0.0, 0.0
                return loop
            if self._sori_unheard(start, end):
                return self._reference(frame)  # from Sori's record now
            self._quiet_s += (end - start) / 1e9
            if self._quiet_s * 1000 < TAPS_MS:
                return loop  # a pause in what it plays: its faint sound is still the echo's
            return np.zeros(len(loop)) if active else None
        if self._played is None or not active and not self._played.speaking(end):
            return None
        return np.frombuffer(self._played.between(start, end), "<i2").astype(np.float64)

    def _sori_unheard(self, start: int, end: int) -> bool:
        """Whether Sori has now sounded `LOOPBACK_SILENT_S` with the playback channels
        silent: then they stop being the reference, with a warning."""
        if self._played is None or not self._played.speaking(end):
            return False
        said = np.frombuffer(self._played.between(start, end), "<i2").astype(np.float64)
        if np.sqrt(np.mean(said**2)) < LOOPBACK_FLOOR:
            return False
        self._silent_s += (end - start) / 1e9
        if self._silent_s < LOOPBACK_SILENT_S:
            return False
        log.warning(
            "the board's playback channel(s) %s stayed silent while Sori spoke: Sori "
            "plays through another output, so its echo is cancelled from its own record; "
            "play through the array's own output to cancel all it plays",
            ", ".join(map(str, self._playback)),
        )
        self._playback = []
        return True


def dereverbed(frames: Iterable[AudioFrame], dereverb: Dereverberator) -> Iterator[AudioFrame]:
    """One microphone's frames through `dereverb` (`audio.dereverb` with one channel)."""
    for frame in frames:
        mono = dereverb.process(s16_to_float(frame.pcm)[:, None])[:, 0]
        yield AudioFrame(float_to_s16(mono), frame.start_ns, frame.echo_energy)
