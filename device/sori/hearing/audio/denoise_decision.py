"""`audio.denoise = "auto"`: per utterance, denoise only when it helps, decided once for
everything the hearing pipeline hears of the utterance (the recognizer and the wake
detector alike).

What decides is an SNR estimate, not the room's absolute level: a home's room measures
-30 to -45 dBFS, yet a voice 25 dB above it is heard better raw, while white noise 20 dB
under the speech is heard far better denoised (docs/hearing.md, "Denoising"). When the
voice detector hears speech start, the pipeline holds `vad.pre_roll_ms` of the room before
it and `vad.start_ms` of the speech's onset (`sori.hearing.pipeline.Hearing`'s ring). Both
are measured in the speech band (`SPEECH_BAND_HZ`: a rumble or hum below it masks no
syllable): the room as the `NOISE_PERCENTILE`th percentile of the pre-roll's 20 ms frame
levels, the speech as the loudest onset frame. Below `SNR_BELOW_DB` the utterance is
denoised, unless the room is at or below `audio.denoise_above_dbfs` (a quiet room: nothing
to take out).

While Sori speaks, the pre-roll holds Sori's own voice (what echo cancellation left of it),
not the room: the estimate would read a low SNR and denoise a clean room, and a denoiser
keeps voices, Sori's among them. So an utterance that begins while the speaker plays keeps
the last decision made in a silent room (raw before any). So does one whose pre-roll
reaches back to the stream's first frame: a clip that opens on its first word has a soft
onset the voice detector hears late, and its "room" would be that word (an espeak-ng
command read its room at -21.6 dBFS, was denoised, and lost its words).

One `DenoiseDecision` per hearing pipeline; the denoisers themselves come from a process
pool (`POOL`): an utterance borrows one and gives it back when it ends, so a pipeline
holds at most one, and the model (0.6 s to load for DeepFilterNet3) is loaded once.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sori.core.errors import DependencyError, ModelError
from sori.hearing.audio.denoise import load_denoiser
from sori.hearing.audio.format import RATE_HZ, AudioFrame

log = logging.getLogger(__name__)

SPEECH_BAND_HZ = (300.0, 3400.0)
"""Where levels are measured: the band that carries speech."""
NOISE_PERCENTILE = 10
"""Which pre-roll frame level is the room's: a click or a gap of digital silence does not
count, nor does a voice that trails into the pre-roll."""
SNR_BELOW_DB = 33.0
"""An utterance whose speech stands less than this above the room, in dB (speech band;
the estimate reads 10-17 dB above the SNR of a mix, speech RMS over noise RMS), is
denoised. On 10 shared read clips through the pipeline: white and pink
noise at 10 dB SNR measure 18-27, at 20 dB 28-37; clean speech in a -35 dBFS room of
brown noise 33-41, at -45 dBFS 42-51; a quiet room 40-70 (docs/hearing.md, "Denoising")."""
SILENCE_DBFS = -120.0
"""The level of digital silence (log of zero)."""
FRAME_MS = 20
DECISION_SPEECH_MS = 200
"""How much speech after the VAD's onset the decision waits for (the pipeline holds the
utterance's frames meanwhile, then its listeners catch up at once): the onset alone (120
ms) is often a soft first consonant, which reads the SNR several dB high."""


class StreamDenoiser(Protocol):
    """A speech enhancer heard one utterance at a time: 16 kHz s16le in, as many samples
    out, `delay_ms` late (sori.hearing.audio.denoise, sori.hearing.audio.light_denoisers)."""

    delay_ms: int

    def process(self, pcm: bytes) -> bytes: ...

    def restart(self) -> None: ...

    def drain(self) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Estimate:
    room_dbfs: float
    """The room before the speech, in the speech band."""
    speech_dbfs: float
    """The speech's onset, in the speech band."""

    @property
    def snr_db(self) -> float:
        return self.speech_dbfs - self.room_dbfs


@dataclass(frozen=True, slots=True)
class Decision:
    """One utterance's decision, for tests, benches and the log."""

    estimate: Estimate | None
    """None when Sori was speaking (the last decision was kept)."""
    denoised: bool
    """Whether the utterance was heard denoised."""


def band_levels(pcm: bytes, frame_ms: int = FRAME_MS) -> np.ndarray:
    """The speech-band level of each `frame_ms` frame of `pcm` (16 kHz s16le), in dBFS
    (a full-scale sine in the band is -3). Pure."""
    samples = np.frombuffer(pcm, "<i2").astype(np.float64) / 32768
    size = RATE_HZ * frame_ms // 1000
    frames = samples[: len(samples) // size * size].reshape(-1, size)
    if not len(frames):
        return np.zeros(0)
    spectrum = np.abs(np.fft.rfft(frames * np.hanning(size), axis=1)) ** 2
    freqs = np.fft.rfftfreq(size, 1 / RATE_HZ)
    band = (freqs >= SPEECH_BAND_HZ[0]) & (freqs <= SPEECH_BAND_HZ[1])
    # Parseval, with the window's power (3/8) undone: a frame's mean power in the band
    power = 2 * spectrum[:, band].sum(axis=1) / (size * size * 0.375)
    return 10 * np.log10(np.maximum(power, 10 ** (SILENCE_DBFS / 10)))


def estimate(room: bytes, speech: bytes) -> Estimate:
    """The room's level in `room` (the pre-roll) and the speech's in `speech` (its onset).
    Pure."""
    room_levels, speech_levels = band_levels(room), band_levels(speech)
    room_dbfs = (
        float(np.percentile(room_levels, NOISE_PERCENTILE)) if len(room_levels) else SILENCE_DBFS
    )
    speech_dbfs = float(speech_levels.max()) if len(speech_levels) else SILENCE_DBFS
    return Estimate(room_dbfs, speech_dbfs)


def heard_estimate(frames: list[AudioFrame], onset: int) -> Estimate | None:
    """The room and the speech of an utterance that begins with `frames` (the ring: the
    pre-roll, then the last `onset` of them the speech's onset); None when the ring reaches
    back to the stream's first frame, where the "room" would be the first word (see the
    module). Pure."""
    if frames and frames[0].start_ns == 0:
        return None
    split = max(0, len(frames) - onset)
    return estimate(_pcm(frames[:split]), _pcm(frames[split:]))


def wants_denoise(heard: Estimate, above_dbfs: float, snr_below_db: float = SNR_BELOW_DB) -> bool:
    """Whether an utterance heard so should be denoised: its SNR is low and its room is
    above the quiet floor `above_dbfs`. Pure."""
    return heard.room_dbfs > above_dbfs and heard.snr_db < snr_below_db


class DenoiserPool:
    """The process's loaded denoisers of each kind, idle between utterances. A kind that
    cannot load is tried once: it logs one line, and its utterances are heard raw."""

    def __init__(self) -> None:
        self._idle: dict[str, list[StreamDenoiser]] = {}
        self._broken: set[str] = set()
        self._lock = threading.RLock()
        """Also held while loading: an utterance that needs a denoiser while one loads in
        the background (`warm`) waits for it rather than loading a second."""
        self.loaded = 0
        """Denoisers this pool has loaded, for tests."""

    def lend(self, kind: str) -> StreamDenoiser | None:
        """A denoiser of `kind`, restarted; None when it cannot load."""
        with self._lock:
            idle = self._idle.setdefault(kind, [])
            denoiser = idle.pop() if idle else None
            if denoiser is None:
                if kind in self._broken:
                    return None
                denoiser = self._load(kind)
                if denoiser is None:
                    return None
        denoiser.restart()
        return denoiser

    def give_back(self, kind: str, denoiser: StreamDenoiser) -> None:
        with self._lock:
            self._idle.setdefault(kind, []).append(denoiser)

    def warm(self, kind: str) -> bool:
        """Load one denoiser of `kind` now (1.2-1.3 s for DeepFilterNet on one x86 core),
        so the first noisy utterance does not wait; whether it loaded. It hears nothing:
        a warmed denoiser is a fresh one, so what an utterance hears never depends on
        whether the warm-up on its thread had finished (a replay repeats exactly)."""
        denoiser = self.lend(kind)
        if denoiser is None:
            return False
        self.give_back(kind, denoiser)
        return True

    def forget(self) -> None:
        """Drop what the denoisers learned of the room: the next utterance gets a fresh
        state (replays of unrelated recordings, whose results must not depend on what was
        heard before them)."""
        with self._lock:
            self._idle.clear()

    def _load(self, kind: str) -> StreamDenoiser | None:
        try:
            denoiser = load_denoiser(kind)
        except (DependencyError, ModelError) as exc:
            self._broken.add(kind)
            log.warning('audio.denoise = "auto" hears without denoising: %s', exc)
            return None
        self.loaded += 1
        return denoiser


POOL = DenoiserPool()
"""The process's one pool."""


class DenoiseDecision:
    """`audio.denoise = "auto"` for one hearing pipeline (see the module docstring): the
    decision at each utterance's start, and the utterance's frames raw or denoised."""

    def __init__(
        self,
        kind: str,
        above_dbfs: float,
        snr_below_db: float = SNR_BELOW_DB,
        with_wake: bool = True,
        pool: DenoiserPool = POOL,
    ) -> None:
        self.kind = kind
        """The denoiser "auto" runs (`audio.denoise_engine`)."""
        self.with_wake = with_wake
        """Utterances that need the wake phrase are decided too (`wake.denoise = "auto"`);
        else they are heard raw."""
        self.above_dbfs = above_dbfs
        self.snr_below_db = snr_below_db
        self._pool = pool
        self._last = False
        """The last decision made with Sori silent: what an utterance over Sori's voice keeps."""
        self._denoiser: StreamDenoiser | None = None
        self.decisions: list[Decision] = []
        """Every utterance's decision so far."""

    @property
    def denoising(self) -> bool:
        """The open utterance is heard denoised (`delay_ms` late)."""
        return self._denoiser is not None

    def begin(self, frames: list[AudioFrame], onset: int, sori_speaks: bool) -> list[AudioFrame]:
        """An utterance starts: `frames` are the ring before it, the last `onset` of them
        the speech's onset; `sori_speaks` while any of them may hold Sori's voice. Decide,
        and return `frames` as the utterance's listeners hear them."""
        self.end()
        heard = None if sori_speaks else heard_estimate(frames, onset)
        if heard is None:
            wanted = self._last
        else:
            wanted = self._last = wants_denoise(heard, self.above_dbfs, self.snr_below_db)
        if wanted:
            self._denoiser = self._pool.lend(self.kind)  # None when it cannot load: raw
        self.decisions.append(Decision(heard, self._denoiser is not None))
        if heard is not None:
            log.debug("denoise auto: room %.1f dBFS, SNR %.1f dB: %s", heard.room_dbfs,
                      heard.snr_db, "denoised" if self.denoising else "raw")  # fmt: skip
        return [self.hear(frame) for frame in frames]

    def over_sori(self, frames: list[AudioFrame]) -> list[AudioFrame]:
        """A command begins within the utterance while Sori speaks (after a wake phrase said
        over Sori's answer): Sori's voice is what masks it, so from here on the utterance is
        heard denoised, from `frames` (the command's start, as heard so far) on. Without
        echo cancellation, such a command was committed only denoised
        (tests/test_wake_turns.py, barge-in)."""
        if self._denoiser is None:
            self._denoiser = self._pool.lend(self.kind)
            if self._denoiser is None:
                return frames
            self.decisions.append(Decision(None, True))
        return [self.hear(frame) for frame in frames]

    def hear(self, frame: AudioFrame) -> AudioFrame:
        """`frame` of the open utterance as its listeners hear it: raw, or denoised (the
        same size and times; the audio `delay_ms` late)."""
        if self._denoiser is None:
            return frame
        return AudioFrame(self._denoiser.process(frame.pcm), frame.start_ns, frame.echo_energy)

    def drain(self) -> bytes:
        """The denoiser's held-back audio, pushed out (a pause the recognizer catches up
        on); nothing when raw. The denoiser restarts after it, so the frames that follow
        stay `delay_ms` late rather than later by each pause."""
        if self._denoiser is None:
            return b""
        held = self._denoiser.drain()
        self._denoiser.restart()
        return held

    def end(self) -> None:
        """The utterance is over: the denoiser goes back to the pool."""
        if self._denoiser is not None:
            self._pool.give_back(self.kind, self._denoiser)
            self._denoiser = None


def _pcm(frames: list[AudioFrame]) -> bytes:
    return b"".join(frame.pcm for frame in frames)
