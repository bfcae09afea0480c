"""PCM format of the pipeline and conversion into it.

Everything after the sources is 16 kHz, mono, signed 16-bit little-endian PCM, cut into
frames of 10, 20 or 30 ms (what webrtcvad accepts). This module turns any file or raw
stream into that: soundfile (libsndfile) decodes WAV and FLAC of any sample width,
channels are averaged, and soxr resamples.

A microphone array (`audio.channels` > 1) keeps its channels apart up to the front end
(sori.hearing.audio.front_end), which beams them into that one mono stream: its frames
are `ChannelFrame`s, float samples of every microphone.
"""

from __future__ import annotations

import io
import logging
import struct
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sori.core.errors import AudioError, DependencyError

log = logging.getLogger(__name__)

RATE_HZ = 16_000
"""Sample rate of the pipeline."""
SAMPLE_BYTES = 2
"""Bytes per sample of the pipeline (signed 16-bit)."""
FRAME_MS_CHOICES = (10, 20, 30)
"""Frame lengths webrtcvad accepts."""
MIN_RATE_HZ = 8_000
"""Lowest input sample rate accepted (telephone audio); below it speech is not intelligible
and resampling up would multiply the data (1 Hz → 16 kHz is 16,000 times)."""
MAX_RATE_HZ = 192_000
"""Highest input sample rate accepted (studio audio)."""
MAX_CHANNELS = 32
"""Most input channels accepted."""
MAX_DECODED_BYTES = 1 << 30
"""Most float samples one file may decode into, in bytes (about 4.6 hours of 16 kHz mono);
checked from the header before anything is read."""

RAW_FORMATS = {
    "s16le": np.dtype("<i2"),
    "s32le": np.dtype("<i4"),
    "f32le": np.dtype("<f4"),
    "u8": np.dtype("u1"),
}
"""Raw PCM sample formats accepted on stdin, by their sox/ffmpeg names."""


def pcm_duration_ns(pcm: bytes) -> int:
    """How long pipeline audio (16 kHz mono s16le) lasts, in nanoseconds."""
    return len(pcm) // SAMPLE_BYTES * 1_000_000_000 // RATE_HZ


@dataclass(frozen=True, slots=True)
class AudioFrame:
    """One frame of pipeline audio: 16 kHz mono s16le."""

    pcm: bytes
    """The samples, signed 16-bit little-endian."""
    start_ns: int
    """Stream time of the first sample, in nanoseconds from the start of the stream."""
    echo_energy: float = 0.0
    """Energy (sum of squared samples) of the speaker's sound that echo cancellation took
    out of this frame: Sori's own voice (sori.hearing.audio.echo_cancel), or whatever the
    board plays where its playback channel is the reference (sori.hearing.audio.front_end);
    0 where it took out nothing."""

    @property
    def speaker_sounded(self) -> bool:
        """Echo cancellation worked on this frame: the device's speaker sounded within the
        cancellers' reach, so what is left of its sound may be heard in it."""
        return self.echo_energy > 0

    @property
    def samples(self) -> int:
        return len(self.pcm) // SAMPLE_BYTES

    @property
    def duration_ns(self) -> int:
        return pcm_duration_ns(self.pcm)

    @property
    def end_ns(self) -> int:
        """Stream time just after the last sample, in nanoseconds."""
        return self.start_ns + self.duration_ns


@dataclass(frozen=True, slots=True)
class ChannelFrame:
    """One frame of a microphone array's audio, before the front end makes it mono."""

    samples: np.ndarray
    """Float32 samples in [-1, 1], shaped (samples, channels), at 16 kHz."""
    start_ns: int
    """Stream time of the first sample, in nanoseconds from the start of the stream."""

    @property
    def end_ns(self) -> int:
        """Stream time just after the last sample, in nanoseconds."""
        return self.start_ns + len(self.samples) * 1_000_000_000 // RATE_HZ


def check_frame_ms(frame_ms: int) -> int:
    if frame_ms not in FRAME_MS_CHOICES:
        raise AudioError(f"frame length {frame_ms} ms is not supported; use 10, 20 or 30")
    return frame_ms


def check_rate(rate_hz: int, what: str = "audio") -> int:
    """`rate_hz` if it is within 8-192 kHz, else an AudioError that says what to do."""
    if isinstance(rate_hz, bool) or not isinstance(rate_hz, int | float):
        raise AudioError(f"{what}: sample rate must be a number of Hz, got {rate_hz!r}")
    if not MIN_RATE_HZ <= rate_hz <= MAX_RATE_HZ:
        raise AudioError(
            f"{what}: sample rate {rate_hz} Hz is outside {MIN_RATE_HZ}-{MAX_RATE_HZ} Hz; "
            "give 16000 Hz audio (sox in.wav -r 16000 out.wav)"
        )
    return int(rate_hz)


def check_channels(channels: int, what: str = "audio") -> int:
    """`channels` if it is 1-32, else an AudioError."""
    if isinstance(channels, bool) or not isinstance(channels, int):
        raise AudioError(f"{what}: channel count must be a whole number, got {channels!r}")
    if not 1 <= channels <= MAX_CHANNELS:
        raise AudioError(
            f"{what}: {channels} channels is outside 1-{MAX_CHANNELS}; give mono audio"
        )
    return channels


def check_size(frames: int, channels: int, what: str = "audio") -> None:
    """Refuse a file whose samples would decode into more than MAX_DECODED_BYTES."""
    if frames < 0 or frames * channels * 4 > MAX_DECODED_BYTES:
        raise AudioError(
            f"{what}: {frames} samples × {channels} channels is more than "
            f"{MAX_DECODED_BYTES >> 20} MiB decoded; split the recording (sox in.wav out.wav "
            "trim 0 3600 : newfile : restart)"
        )


def frame_bytes(frame_ms: int) -> int:
    """Bytes in one pipeline frame of `frame_ms` milliseconds."""
    return RATE_HZ * frame_ms // 1000 * SAMPLE_BYTES


def to_pipeline(samples: np.ndarray, rate_hz: int) -> bytes:
    """Float samples in [-1, 1], shape (n,) or (n, channels), at `rate_hz` → 16 kHz mono s16le."""
    check_rate(rate_hz)
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
    """Float samples → s16le, the exact inverse of `s16_to_float`: a 16-bit recording
    decoded to floats comes back sample for sample, as a microphone would have given it."""
    return np.clip(np.rint(np.asarray(x) * 32768.0), -32768, 32767).astype("<i2").tobytes()


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
    check_channels(channels)
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
    samples, rate_hz = _decode_checked(Path(path))
    return to_pipeline(samples, rate_hz)


def read_channels(path: str | Path, channels: int) -> np.ndarray:
    """Decode a recording of a microphone array as recorded: float32 samples shaped
    (samples, channels) at 16 kHz. Raises AudioError when the file has another number of
    channels than the array has microphones (`channels`)."""
    path = Path(path)
    samples, rate_hz = _decode_checked(path)
    if samples.shape[1] != channels:
        raise AudioError(
            f"{path}: {samples.shape[1]} channel(s), but audio.channels is {channels} (one per "
            "microphone of the array); give a recording with one channel per microphone, "
            "in the order of [audio.array]"
        )
    if rate_hz == RATE_HZ:
        return np.ascontiguousarray(samples, dtype=np.float32)
    return np.stack([resample(samples[:, c], rate_hz) for c in range(channels)], axis=1)


def _decode_checked(path: Path) -> tuple[np.ndarray, int]:
    """The file's samples shaped (samples, channels) and its rate, or an AudioError."""
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
    return samples, rate_hz


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
        info = soundfile.info(str(path))  # the header only: check before decoding
        rate_hz, channels, frames = int(info.samplerate), int(info.channels), int(info.frames)
        check_rate(rate_hz, str(path))
        check_channels(channels, str(path))
        check_size(frames, channels, str(path))
        samples, rate_hz = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, ValueError, TypeError, EOFError) as exc:  # LibsndfileError: Runtime
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
            check_rate(rate_hz, str(path))
            check_channels(channels, str(path))
            frames = min(w.getnframes(), path.stat().st_size // max(1, width * channels))
            check_size(frames, channels, str(path))
            data = w.readframes(frames)
    # wave raises a bare RuntimeError for a chunk size past the file, struct.error for short
    # fields, ValueError for odd widths.
    except (wave.Error, EOFError, ValueError, RuntimeError, struct.error) as exc:
        raise AudioError(f"{path}: broken or truncated WAV file ({exc})") from None
    names = {1: "u8", 2: "s16le", 4: "s32le"}
    if width not in names:
        raise AudioError(f"{path}: {8 * width}-bit WAV needs soundfile: pip install soundfile")
    return decode_raw(data, names[width], rate_hz, channels), rate_hz


def write_wav(
    path: str | Path | io.BytesIO, pcm: bytes, rate_hz: int = RATE_HZ, channels: int = 1
) -> None:
    """Write s16le PCM (interleaved when `channels` > 1) as a WAV file (for tests,
    fixtures and debugging)."""
    target = path if isinstance(path, io.BytesIO) else str(path)
    with wave.open(target, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(SAMPLE_BYTES)
        w.setframerate(rate_hz)
        w.writeframes(pcm)
