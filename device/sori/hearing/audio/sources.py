"""Audio sources: a file, raw PCM from a byte stream (stdin), the microphone.

Each source yields pipeline frames (16 kHz mono s16le, `frame_ms` long) stamped with
stream time counted from samples. Only `MicSource` touches sound hardware, and it
imports sounddevice when opened, not before.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np

from sori.core.errors import AudioError, DependencyError
from sori.hearing.audio.format import (
    RATE_HZ,
    RAW_FORMATS,
    AudioFrame,
    check_channels,
    check_rate,
    decode_raw,
    float_to_s16,
    read_file,
)
from sori.hearing.audio.ring import FrameChunker

log = logging.getLogger(__name__)


class AudioSource(Protocol):
    """Something that yields pipeline frames until it ends (a file) or is closed (a mic)."""

    name: str
    """What to call the source in output and errors (a path, "stdin", "mic")."""

    def frames(self) -> Iterator[AudioFrame]: ...

    def close(self) -> None: ...


class FileSource:
    """A WAV or FLAC file of any rate, width and channel count, converted on open."""

    def __init__(self, path: str | Path, frame_ms: int = 20) -> None:
        self.name = str(path)
        self.frame_ms = frame_ms
        self.pcm = read_file(path)
        """The whole file as pipeline PCM."""

    @property
    def duration_ns(self) -> int:
        return len(self.pcm) // 2 * 1_000_000_000 // RATE_HZ

    def frames(self) -> Iterator[AudioFrame]:
        chunker = FrameChunker(self.frame_ms)
        yield from chunker.push(self.pcm)
        yield from chunker.flush()

    def close(self) -> None:
        pass


class RawSource:
    """Raw interleaved PCM from a byte stream (`--format s16le --rate 8000` on stdin)."""

    def __init__(
        self,
        stream: BinaryIO,
        sample_format: str = "s16le",
        rate_hz: int = RATE_HZ,
        channels: int = 1,
        frame_ms: int = 20,
        name: str = "stdin",
        read_bytes: int = 4096,
    ) -> None:
        if sample_format not in RAW_FORMATS:
            raise AudioError(
                f"unknown raw format {sample_format!r}; use one of {', '.join(RAW_FORMATS)}"
            )
        check_rate(rate_hz, f"{name} (--rate)")
        check_channels(channels, f"{name} (--channels)")
        if not 0 < read_bytes <= 1 << 20:
            raise AudioError(f"{name}: read size {read_bytes} must be 1 byte to 1 MiB")
        self.name = name
        self._stream = stream
        self._format = sample_format
        self._rate_hz = rate_hz
        self._channels = channels
        self._frame_ms = frame_ms
        self._read_bytes = read_bytes
        self._step = RAW_FORMATS[sample_format].itemsize * channels

    def frames(self) -> Iterator[AudioFrame]:
        chunker = FrameChunker(self._frame_ms)
        resampler = _Resampler(self._rate_hz)
        carry = b""
        total = 0
        while True:
            data = self._stream.read(self._read_bytes)
            if not data:
                break
            data = carry + data
            usable = len(data) - len(data) % self._step
            carry = data[usable:]
            total += usable
            x = decode_raw(data[:usable], self._format, self._rate_hz, self._channels)
            yield from chunker.push(resampler.push(x.mean(axis=1)))
        yield from chunker.push(resampler.flush())
        yield from chunker.flush()
        if total == 0:
            raise AudioError(f"{self.name}: no audio (0 bytes of {self._format} PCM)")

    def close(self) -> None:
        pass


class _Resampler:
    """Streaming float → pipeline PCM through soxr, or a pass-through at 16 kHz."""

    def __init__(self, rate_hz: int) -> None:
        self._stream = None
        if rate_hz != RATE_HZ:
            try:
                import soxr
            except ImportError:
                raise DependencyError("resampling needs soxr: pip install 'sori[audio]'") from None
            self._stream = soxr.ResampleStream(rate_hz, RATE_HZ, 1, dtype="float32", quality="HQ")

    def push(self, x: np.ndarray) -> bytes:
        x = np.ascontiguousarray(x, dtype=np.float32)
        if self._stream is not None:
            x = self._stream.resample_chunk(x)
        return float_to_s16(x)

    def flush(self) -> bytes:
        if self._stream is None:
            return b""
        return float_to_s16(self._stream.resample_chunk(np.zeros(0, np.float32), last=True))


class MicSource:
    """The live microphone through sounddevice (PortAudio), opened lazily.

    `frames()` blocks for the next frame; `close()` ends the iteration. Stream time counts
    captured samples, so dropped buffers show up as a log warning, not as a time jump.
    """

    def __init__(self, device: str = "", frame_ms: int = 20, max_queue: int = 500) -> None:
        self.name = f"mic:{device}" if device else "mic"
        self._device = device
        self._frame_ms = frame_ms
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=max_queue)
        self._stream = None

    def open(self) -> MicSource:
        sd = import_sounddevice()
        device: str | int | None = self._device or None
        if isinstance(device, str) and device.isdigit():
            device = int(device)
        try:
            info = sd.query_devices(device, "input")
        except (ValueError, sd.PortAudioError) as exc:
            raise AudioError(
                f"no input device {self._device or '(default)'!r} ({exc}); "
                "list them with: python -m sounddevice"
            ) from None
        rate = RATE_HZ
        try:
            sd.check_input_settings(device=device, samplerate=RATE_HZ, channels=1)
        except Exception:  # the device cannot do 16 kHz: capture at its rate, resample
            rate = int(info["default_samplerate"])
        self._resampler = _Resampler(rate)
        self._stream = sd.InputStream(
            samplerate=rate,
            channels=1,
            dtype="float32",
            blocksize=rate * self._frame_ms // 1000,
            device=device,
            callback=self._callback,
        )
        self._stream.start()
        log.info("microphone %s open at %d Hz", info.get("name", device), rate)
        return self

    def _callback(self, indata, frames, time_info, status) -> None:  # PortAudio thread
        if status:
            log.warning("microphone: %s", status)
        try:
            self._queue.put_nowait(self._resampler.push(indata[:, 0].copy()))
        except queue.Full:
            log.warning("microphone: pipeline too slow, dropped %d samples", frames)

    def frames(self) -> Iterator[AudioFrame]:
        if self._stream is None:
            self.open()
        chunker = FrameChunker(self._frame_ms)
        while True:
            pcm = self._queue.get()
            if pcm is None:
                return
            yield from chunker.push(pcm)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None
        self._queue.put(None)


def import_sounddevice():
    """sounddevice, or a DependencyError that says what to install."""
    try:
        import sounddevice
    except ImportError:
        raise DependencyError(
            "the microphone needs sounddevice: pip install 'sori[audio]'"
        ) from None
    except OSError as exc:  # sounddevice raises OSError when libportaudio is missing
        raise DependencyError(
            f"the microphone needs PortAudio ({exc}): apt-get install libportaudio2"
        ) from None
    return sounddevice
