"""PCM format of the pipeline and conversion into it.

Everything after the sources is 16 kHz, mono, signed 16-bit little-endian PCM, cut into
frames of 10, 20 or 30 ms (what webrtcvad accepts). This module turns any file or raw
stream into that: soundfile (libsndfile) decodes WAV and FLAC of any sample width,
channels are averaged, and soxr resamples.
"""

from __future__ import annotations

import io
import logging
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sori.errors import AudioError, DependencyError

log = logging.getLogger(__name__)

RATE_HZ = 16_000
"""Sample rate of the pipeline."""
SAMPLE_BYTES = 2
"""Bytes per sample of the pipeline (signed 16-bit)."""
FRAME_MS_CHOICES = (10, 20, 30)
"""Frame lengths webrtcvad accepts."""

RAW_FORMATS = {
    "s16le": np.dtype("<i2"),
    "s32le": np.dtype("<i4"),
    "f32le": np.dtype("<f4"),
    "u8": np.dtype("u1"),
}
"""Raw PCM sample formats accepted on stdin, by their sox/ffmpeg names."""


@dataclass(frozen=True, slots=True)
class AudioFrame:
    """One frame of pipeline audio: 16 kHz mono s16le."""

    pcm: bytes
    """The samples, signed 16-bit little-endian."""
    start_ns: int
    """Stream time of the first sample, in nanoseconds from the start of the stream."""

    @property
    def samples(self) -> int:
        return len(self.pcm) // SAMPLE_BYTES

    @property
    def duration_ns(self) -> int:
        return self.samples * 1_000_000_000 // RATE_HZ

    @property
    def end_ns(self) -> int:
        """Stream time just after the last sample, in nanoseconds."""
        return self.start_ns + self.duration_ns


def check_frame_ms(frame_ms: int) -> int:
    if frame_ms not in FRAME_MS_CHOICES:
        raise AudioError(f"frame length {frame_ms} ms is not supported; use 10, 20 or 30")
    return frame_ms


def frame_bytes(frame_ms: int) -> int:
    """Bytes in one pipeline frame of `frame_ms` milliseconds."""
    return RATE_HZ * frame_ms // 1000 * SAMPLE_BYTES


def to_pipeline(samples: np.ndarray, rate_hz: int) -> bytes:
    """Float samples in [-1, 1], shape (n,) or (n, channels), at `rate_hz` → 16 kHz mono s16le."""
    if rate_hz <= 0:
        raise AudioError(f"sample rate must be positive, got {rate_hz}")
    x = np.asarray(samples, dtype=np.float32)
    if x.ndim == 2:
        x = x.mean(axis=1) if x.shape[1] > 1 else x[:, 0]
    elif x.ndim != 1:
        raise AudioError(f"expected 1 or 2 dimensions of samples, got {x.ndim}")
    if rate_hz != RATE_HZ and len(x):
        x = resample(x, rate_hz)
    return float_to_s16(x)


def resample(x: np.ndarray, rate_hz: int) -> np.ndarray:
    try:
        import soxr
    except ImportError:
        raise DependencyError(
            f"resampling {rate_hz} Hz audio needs soxr: pip install 'sori[audio]'"
        ) from None
    return soxr.resample(x, rate_hz, RATE_HZ, quality="HQ").astype(np.float32)


def float_to_s16(x: np.ndarray) -> bytes:
    return (np.clip(x, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


def s16_to_float(pcm: bytes) -> np.ndarray:
    """Pipeline PCM → float32 samples in [-1, 1)."""
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def decode_raw(data: bytes, sample_format: str, rate_hz: int, channels: int = 1) -> np.ndarray:
    """Raw interleaved PCM → float32 samples of shape (n, channels). Trailing partial
    samples are dropped (a stream may end mid-sample)."""
    dtype = RAW_FORMATS.get(sample_format)
    if dtype is None:
        raise AudioError(
            f"unknown raw format {sample_format!r}; use one of {', '.join(RAW_FORMATS)}"
        )
    if channels < 1:
        raise AudioError(f"channel count must be at least 1, got {channels}")
    step = dtype.itemsize * channels
    usable = len(data) - len(data) % step
    x = np.frombuffer(data[:usable], dtype=dtype).reshape(-1, channels)
    if dtype.kind == "f":
        return x.astype(np.float32)
    if dtype.kind == "u":
        return (x.astype(np.float32) - 128.0) / 128.0
    return x.astype(np.float32) / float(2 ** (8 * dtype.itemsize - 1))


def read_file(path: str | Path) -> bytes:
    """Decode an audio file (WAV, or FLAC/OGG where soundfile is installed) into pipeline
    PCM. Raises AudioError with the file name and the reason for anything unreadable."""
    path = Path(path)
    if not path.exists():
        raise AudioError(f"{path}: no such file")
    if path.is_dir():
        raise AudioError(f"{path}: is a folder, not an audio file")
    try:
        with path.open("rb") as f:
            head = f.read(12)
    except OSError as exc:
        raise AudioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not head:
        raise AudioError(f"{path}: empty file (0 bytes), not audio")
    samples, rate_hz = _decode(path, head)
    if len(samples) == 0:
        raise AudioError(f"{path}: contains no audio samples (zero-length recording)")
    return to_pipeline(samples, rate_hz)


def _decode(path: Path, head: bytes) -> tuple[np.ndarray, int]:
    try:
        import soundfile
    except (ImportError, OSError):
        soundfile = None
    if soundfile is None:
        if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
            return _decode_wave(path)
        raise DependencyError(
            f"{path}: reading this format needs soundfile and libsndfile: "
            "apt-get install libsndfile1 && pip install soundfile"
        )
    try:
        samples, rate_hz = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, ValueError, TypeError) as exc:  # LibsndfileError is a RuntimeError
        reason = str(exc).split(":", 1)[-1].strip() or "unknown error"
        if head[:4] == b"RIFF":
            raise AudioError(f"{path}: broken or truncated WAV file ({reason})") from None
        raise AudioError(
            f"{path}: not a readable audio file ({reason}); give WAV or FLAC"
        ) from None
    return samples, int(rate_hz)


def _decode_wave(path: Path) -> tuple[np.ndarray, int]:
    """WAV through the standard library, for machines without libsndfile."""
    try:
        with wave.open(str(path), "rb") as w:
            width, channels, rate_hz = w.getsampwidth(), w.getnchannels(), w.getframerate()
            data = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise AudioError(f"{path}: broken or truncated WAV file ({exc})") from None
    names = {1: "u8", 2: "s16le", 4: "s32le"}
    if width not in names:
        raise AudioError(f"{path}: {8 * width}-bit WAV needs soundfile: pip install soundfile")
    return decode_raw(data, names[width], rate_hz, channels), rate_hz


def write_wav(path: str | Path | io.BytesIO, pcm: bytes, rate_hz: int = RATE_HZ) -> None:
    """Write mono s16le PCM as a WAV file (for tests, fixtures and debugging)."""
    target = path if isinstance(path, io.BytesIO) else str(path)
    with wave.open(target, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(SAMPLE_BYTES)
        w.setframerate(rate_hz)
        w.writeframes(pcm)
