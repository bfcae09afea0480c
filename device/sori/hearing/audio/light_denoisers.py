"""Two lighter speech enhancers than DeepFilterNet3, for small boards: RNNoise
(`audio.denoise = "rnnoise"`, the PyPI package pyrnnoise, whose wheel carries librnnoise)
and WebRTC's noise suppression (`"webrtc"`, the package webrtc-noise-gain, the one
wyoming-satellite uses). Both stream 16 kHz s16le frames of any multiple of 10 ms and keep
their size; figures against DeepFilterNet3 are in docs/hearing.md ("Denoising").

RNNoise runs at 48 kHz in 10 ms frames, so its audio is resampled up and down (soxr,
streaming), as DeepFilterNet's is; WebRTC's runs at 16 kHz in 10 ms chunks and needs no
resampling. Only librnnoise is loaded from pyrnnoise: its package also imports a media
library (PyAV) that Sori does not need.
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import numpy as np

from sori.core.errors import DependencyError, ModelError
from sori.hearing.audio.format import RATE_HZ

RNNOISE_RATE_HZ = 48_000
RNNOISE_HOP = 480
"""Samples of one RNNoise frame (10 ms at 48 kHz)."""
RNNOISE_DELAY_MS = 20
"""Silence RNNoise's output starts with: the resamplers' and the hop's buffering, so a
whole frame is always ready (as DeepFilterDenoiser's DELAY_MS)."""
WEBRTC_CHUNK = RATE_HZ // 100
"""Samples of one WebRTC chunk (10 ms at 16 kHz)."""
WEBRTC_LEVEL = 2
"""WebRTC's suppression level, 0 (least) to 4; 2 ("high") is wyoming-satellite's default."""


def _rnnoise_library() -> Path:
    """librnnoise from the pyrnnoise wheel, found without importing the package."""
    spec = importlib.util.find_spec("pyrnnoise")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyError(
            'audio.denoise = "rnnoise" needs pyrnnoise: pip install pyrnnoise, '
            'or set audio.denoise = "off"'
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("librnnoise*")) + sorted(folder.glob("rnnoise*.dll"))
    if not found:
        raise ModelError(f"pyrnnoise in {folder} has no librnnoise: reinstall pyrnnoise")
    return found[0]


class RnnoiseDenoiser:
    """RNNoise through its C library (see the module docstring)."""

    delay_ms = RNNOISE_DELAY_MS

    def __init__(self) -> None:
        try:
            import soxr
        except ImportError:
            raise DependencyError(
                'audio.denoise = "rnnoise" needs soxr: pip install soxr'
            ) from None
        lib = ctypes.CDLL(str(_rnnoise_library()))
        lib.rnnoise_create.restype = ctypes.c_void_p
        lib.rnnoise_create.argtypes = [ctypes.c_void_p]
        lib.rnnoise_destroy.argtypes = [ctypes.c_void_p]
        floats = ctypes.POINTER(ctypes.c_float)
        lib.rnnoise_process_frame.argtypes = [ctypes.c_void_p, floats, floats]
        lib.rnnoise_process_frame.restype = ctypes.c_float
        self._lib = lib
        self._state = lib.rnnoise_create(None)
        if not self._state:
            raise ModelError("RNNoise could not create its state")
        self._soxr = soxr
        self.restart()

    def restart(self) -> None:
        """A new stretch of audio follows: resamplers and buffers start again, the delay's
        silence first; the network keeps what it learned of the room."""
        self._up = self._soxr.ResampleStream(RATE_HZ, RNNOISE_RATE_HZ, 1, dtype="float32")
        self._down = self._soxr.ResampleStream(RNNOISE_RATE_HZ, RATE_HZ, 1, dtype="float32")
        self._pending = np.zeros(0, dtype=np.float32)
        self._ready = np.zeros(RATE_HZ * self.delay_ms // 1000, dtype=np.float32)

    def drain(self) -> bytes:
        """The `delay_ms` of enhanced audio still held back, pushed out with silence."""
        return self.process(bytes(2 * RATE_HZ * self.delay_ms // 1000))

    def process(self, pcm: bytes) -> bytes:
        samples = np.frombuffer(pcm, "<i2").astype(np.float32)  # RNNoise works in int16 scale
        self._pending = np.concatenate([self._pending, self._up.resample_chunk(samples)])
        hops = len(self._pending) // RNNOISE_HOP
        if hops:
            out = np.ascontiguousarray(self._pending[: hops * RNNOISE_HOP])
            floats = ctypes.POINTER(ctypes.c_float)
            for i in range(hops):
                hop = out[i * RNNOISE_HOP : (i + 1) * RNNOISE_HOP]
                pointer = hop.ctypes.data_as(floats)
                self._lib.rnnoise_process_frame(self._state, pointer, pointer)
            self._pending = self._pending[hops * RNNOISE_HOP :]
            self._ready = np.concatenate([self._ready, self._down.resample_chunk(out)])
        wanted = len(samples)
        if len(self._ready) < wanted:  # not expected after the delay's silence
            self._ready = np.concatenate([self._ready, np.zeros(wanted - len(self._ready))])
        result, self._ready = self._ready[:wanted], self._ready[wanted:]
        return np.clip(np.rint(result), -32768, 32767).astype("<i2").tobytes()

    def __del__(self) -> None:
        state, self._state = getattr(self, "_state", None), None
        if state:
            self._lib.rnnoise_destroy(state)


class WebrtcDenoiser:
    """WebRTC's noise suppression (see the module docstring); no automatic gain."""

    delay_ms = 0

    def __init__(self, level: int = WEBRTC_LEVEL) -> None:
        try:
            from webrtc_noise_gain import AudioProcessor
        except ImportError:
            raise DependencyError(
                'audio.denoise = "webrtc" needs webrtc-noise-gain: pip install '
                'webrtc-noise-gain, or set audio.denoise = "off"'
            ) from None
        self._processor = AudioProcessor(0, level)
        self._pending = b""

    def restart(self) -> None:
        """Nothing is held back between utterances; the suppressor keeps its noise model."""
        self._pending = b""

    def drain(self) -> bytes:
        return b""

    def process(self, pcm: bytes) -> bytes:
        data = self._pending + pcm
        whole = len(data) // (2 * WEBRTC_CHUNK) * 2 * WEBRTC_CHUNK
        self._pending = data[whole:]
        out = b"".join(
            self._processor.Process10ms(data[i : i + 2 * WEBRTC_CHUNK]).audio
            for i in range(0, whole, 2 * WEBRTC_CHUNK)
        )
        return out + bytes(len(pcm) - len(out))  # a frame not a multiple of 10 ms: padded
