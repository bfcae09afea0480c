"""Audio sources: a file, raw PCM from a byte stream (stdin), the microphone.

Each source yields pipeline frames (16 kHz mono s16le, `frame_ms` long) stamped with
stream time counted from samples. Only `MicSource` touches sound hardware, and it
imports sounddevice when opened, not before.

A microphone array (`audio.channels` > 1) is read with its channels apart: the
microphone opened with that many channels, a file through `FileSource.channel_frames`;
both yield `ChannelFrame`s, which the front end (sori.hearing.audio.front_end) beams
into pipeline frames. With one channel nothing of this runs.
"""

from __future__ import annotations

import contextlib
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
    ChannelFrame,
    check_channels,
    check_rate,
    decode_raw,
    float_to_s16,
    pcm_duration_ns,
    read_channels,
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
        return pcm_duration_ns(self.pcm)

    def frames(self) -> Iterator[AudioFrame]:
        chunker = FrameChunker(self.frame_ms)
        yield from chunker.push(self.pcm)
        yield from chunker.flush()

    def channel_frames(self, channels: int) -> Iterator[ChannelFrame]:
        """The file as a microphone array recorded it, one column per microphone; an
        AudioError when it has another number of channels. Decoded again from the file:
        only the array's path pays for it."""
        samples = read_channels(self.name, channels)
        chunker = ChannelChunker(self.frame_ms, channels)
        yield from chunker.push(samples)
        yield from chunker.flush()

    def close(self) -> None:
        pass


class ChannelChunker:
    """Cuts float samples of several channels, arriving in pieces of any length, into
    `ChannelFrame`s of `frame_ms`, stamped with stream time counted from samples."""

    def __init__(self, frame_ms: int, channels: int) -> None:
        self._size = RATE_HZ * frame_ms // 1000
        self._pending = np.zeros((0, channels), np.float32)
        self._next_start_ns = 0

    def push(self, samples: np.ndarray) -> Iterator[ChannelFrame]:
        """Frames completed by `samples` (shaped (samples, channels))."""
        pending = np.concatenate((self._pending, samples)) if len(self._pending) else samples
        whole = len(pending) - len(pending) % self._size
        for start in range(0, whole, self._size):
            yield self._stamp(np.array(pending[start : start + self._size], np.float32))
        self._pending = np.array(pending[whole:], np.float32)

    def flush(self) -> Iterator[ChannelFrame]:
        """The last, partial frame padded with silence; nothing when none is pending."""
        if len(self._pending):
            padded = np.zeros((self._size, self._pending.shape[1]), np.float32)
            padded[: len(self._pending)] = self._pending
            self._pending = self._pending[:0]
            yield self._stamp(padded)

    def _stamp(self, samples: np.ndarray) -> ChannelFrame:
        frame = ChannelFrame(samples, self._next_start_ns)
        self._next_start_ns = frame.end_ns
        return frame


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
        for x in self._decoded():
            yield from chunker.push(resampler.push(x.mean(axis=1)))
        yield from chunker.push(resampler.flush())
        yield from chunker.flush()

    def channel_frames(self, channels: int) -> Iterator[ChannelFrame]:
        """The stream as a microphone array recorded it, one column per microphone
        (`--channels` must be the array's `audio.channels`)."""
        if channels != self._channels:
            raise AudioError(
                f"{self.name}: {self._channels} channel(s) (--channels), but audio.channels "
                f"is {channels} (one per microphone of the array); give --channels {channels}"
            )
        chunker = ChannelChunker(self._frame_ms, channels)
        resampler = _Resampler(self._rate_hz, channels)
        for x in self._decoded():
            yield from chunker.push(resampler.push_channels(x))
        yield from chunker.push(resampler.flush_channels(channels))
        yield from chunker.flush()

    def _decoded(self) -> Iterator[np.ndarray]:
        """The stream's samples as they arrive, float shaped (samples, channels), at its
        own rate; an AudioError when it held none."""
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
            yield decode_raw(data[:usable], self._format, self._rate_hz, self._channels)
        if total == 0:
            raise AudioError(f"{self.name}: no audio (0 bytes of {self._format} PCM)")

    def close(self) -> None:
        pass


class _Resampler:
    """Streaming float → pipeline PCM through soxr, or a pass-through at 16 kHz; with
    `channels` > 1, float → float of every channel (`push_channels`)."""

    def __init__(self, rate_hz: int, channels: int = 1) -> None:
        self._stream = None
        if rate_hz != RATE_HZ:
            try:
                import soxr
            except ImportError:
                raise DependencyError("resampling needs soxr: pip install 'sori[audio]'") from None
            self._stream = soxr.ResampleStream(
                rate_hz, RATE_HZ, channels, dtype="float32", quality="HQ"
            )

    def push_channels(self, x: np.ndarray) -> np.ndarray:
        """Samples shaped (samples, channels) at 16 kHz."""
        if self._stream is None:
            return x
        return self._stream.resample_chunk(np.ascontiguousarray(x, dtype=np.float32))

    def push(self, x: np.ndarray) -> bytes:
        x = np.ascontiguousarray(x, dtype=np.float32)
        if self._stream is not None:
            x = self._stream.resample_chunk(x)
        return float_to_s16(x)

    def flush(self) -> bytes:
        if self._stream is None:
            return b""
        return float_to_s16(self._stream.resample_chunk(np.zeros(0, np.float32), last=True))

    def flush_channels(self, channels: int) -> np.ndarray:
        """What the resampler still holds of every channel, shaped (samples, channels)."""
        if self._stream is None:
            return np.zeros((0, channels), np.float32)
        return self._stream.resample_chunk(np.zeros((0, channels), np.float32), last=True)


class MicSource:
    """The live microphone through sounddevice (PortAudio), opened lazily.

    `frames()` blocks for the next frame; `close()` ends the iteration. Stream time counts
    captured samples, so dropped buffers show up as a log warning, not as a time jump.
    With `channels` > 1 (a microphone array) the device is opened with that many channels
    and `channel_frames()` yields them apart.
    """

    def __init__(
        self, device: str = "", frame_ms: int = 20, max_queue: int = 500, channels: int = 1
    ) -> None:
        self.name = f"mic:{device}" if device else "mic"
        self._device = device
        self._frame_ms = frame_ms
        self._channels = check_channels(channels, "audio.channels")
        self._queue: queue.Queue[bytes | np.ndarray | None] = queue.Queue(maxsize=max_queue)
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
        self.device_name = str(info.get("name", device))
        self.device_channels = int(info.get("max_input_channels", 1))
        """Channels the device gives; `audio.channels` opens the first of them."""
        if self._channels > self.device_channels:
            raise AudioError(
                f"input device {self.device_name!r} has "
                f"{self.device_channels} channel(s), audio.channels is "
                f"{self._channels}; choose the array's device (python -m sounddevice) or "
                "set audio.channels to what it has"
            )
        rate = RATE_HZ
        try:
            sd.check_input_settings(device=device, samplerate=RATE_HZ, channels=self._channels)
        except Exception:  # the device cannot do 16 kHz: capture at its rate, resample
            rate = int(info["default_samplerate"])
        self._resampler = _Resampler(rate, self._channels)
        try:
            self._stream = sd.InputStream(
                samplerate=rate,
                channels=self._channels,
                dtype="float32",
                blocksize=rate * self._frame_ms // 1000,
                device=device,
                callback=self._callback,
            )
            self._stream.start()
        except sd.PortAudioError as exc:
            raise AudioError(
                f"cannot open input device {self.device_name!r} with {self._channels} "
                f"channel(s) at {rate} Hz ({exc}): another program may hold it (fuser -v "
                "/dev/snd/* shows which), or its driver takes other channel counts or rates "
                "(arecord -D hw:CARD --dump-hw-params lists them)"
            ) from None
        log.info("microphone %s open at %d Hz", self.device_name, rate)
        return self

    def _callback(self, indata, frames, time_info, status) -> None:  # PortAudio thread
        if status:
            log.warning("microphone: %s", status)
        try:
            if self._channels == 1:
                self._queue.put_nowait(self._resampler.push(indata[:, 0].copy()))
            else:
                self._queue.put_nowait(self._resampler.push_channels(indata.copy()))
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

    def channel_frames(self, channels: int) -> Iterator[ChannelFrame]:
        """The array's frames, every microphone apart; `channels` must be what the
        microphone was opened with."""
        if channels != self._channels:
            raise AudioError(f"{self.name}: opened with {self._channels} channels, not {channels}")
        if self._stream is None:
            self.open()
        chunker = ChannelChunker(self._frame_ms, self._channels)
        while True:
            samples = self._queue.get()
            if samples is None:
                return
            yield from chunker.push(samples)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None
        # A reader that stopped reading (a refusal right after open, a stalled pipeline)
        # leaves the queue full, and a blocking put would hang the shutdown for good. The
        # stream is stopped, so making room for the end mark drops only the oldest block.
        while True:
            try:
                self._queue.put_nowait(None)
                return
            except queue.Full:
                with contextlib.suppress(queue.Empty):
                    self._queue.get_nowait()


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
