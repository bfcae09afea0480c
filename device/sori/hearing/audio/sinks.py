"""Audio out: the speaker (sounddevice, imported only when opened) or a WAV file.

A sink takes 16-bit mono PCM. `write` blocks for as long as playing takes (real time
for the speaker, no time for a file); `stop` drops whatever is still queued, for
barge-in. A sink's rate is fixed by its first write; later audio at another rate is
resampled (linear interpolation: fine for speech and earcons, not for music).
"""

from __future__ import annotations

import logging
import threading
import wave
from pathlib import Path
from typing import Protocol

from sori.core.errors import AudioError, DependencyError

log = logging.getLogger(__name__)


class Sink(Protocol):
    """Somewhere audio goes."""

    realtime: bool
    """True when writes take as long as the audio lasts (a speaker)."""

    def write(self, pcm: bytes, rate_hz: int) -> None:
        """Play or store 16-bit mono PCM sampled at `rate_hz` (blocking)."""
        ...

    def stop(self) -> None:
        """Drop audio still queued; the next write starts fresh."""
        ...

    def close(self) -> None:
        """Finish and release the device or file."""
        ...


def resample(pcm: bytes, from_hz: int, to_hz: int) -> bytes:
    """16-bit mono PCM from one rate to another by linear interpolation."""
    if from_hz == to_hz or not pcm:
        return pcm
    import numpy as np

    src = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float32)
    n_out = max(1, round(len(src) * to_hz / from_hz))
    positions = np.arange(n_out) * (from_hz / to_hz)
    out = np.interp(positions, np.arange(len(src)), src)
    return np.clip(out, -32768, 32767).astype("<i2").tobytes()


class WavSink:
    """Writes everything played into one 16-bit mono WAV file."""

    realtime = False

    def __init__(self, path: str | Path, rate_hz: int | None = None) -> None:
        self.path = Path(path)
        self.rate_hz = rate_hz
        self._wav: wave.Wave_write | None = None
        self._lock = threading.Lock()
        self.frames_written = 0
        """Samples written so far."""

    def _open(self, rate_hz: int) -> wave.Wave_write:
        if self._wav is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                wav = wave.open(str(self.path), "wb")  # noqa: SIM115 - closed in close()
            except OSError as exc:
                raise AudioError(f"cannot write {self.path}: {exc}") from None
            self.rate_hz = self.rate_hz or rate_hz
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(self.rate_hz)
            self._wav = wav
        return self._wav

    def write(self, pcm: bytes, rate_hz: int) -> None:
        with self._lock:
            wav = self._open(rate_hz)
            data = resample(pcm, rate_hz, self.rate_hz or rate_hz)
            wav.writeframes(data)
            self.frames_written += len(data) // 2

    def stop(self) -> None:
        """Nothing is ever queued in a file."""

    def close(self) -> None:
        with self._lock:
            if self._wav is None:
                # Nothing was said; still leave a valid, empty WAV behind.
                self._open(self.rate_hz or 22050)
            assert self._wav is not None
            self._wav.close()
            self._wav = None


class SpeakerSink:
    """Plays through PortAudio via sounddevice (`apt-get install libportaudio2`)."""

    realtime = True

    def __init__(self, device: str | int | None = None, rate_hz: int | None = None) -> None:
        try:
            import sounddevice
        except (ImportError, OSError) as exc:
            raise DependencyError(
                f"cannot use the speaker ({exc}); run 'apt-get install libportaudio2' and "
                "'pip install sounddevice', or pass --output FILE.wav"
            ) from None
        self._sd = sounddevice
        self.device = device if device not in ("", "default") else None
        self.rate_hz = rate_hz
        self._stream = None
        self._lock = threading.Lock()

    def _open(self, rate_hz: int):  # noqa: ANN202 - sounddevice.RawOutputStream
        if self._stream is None:
            self.rate_hz = self.rate_hz or rate_hz
            try:
                stream = self._sd.RawOutputStream(
                    samplerate=self.rate_hz, channels=1, dtype="int16", device=self.device
                )
                stream.start()
            except Exception as exc:  # PortAudioError, ValueError for unknown devices
                raise AudioError(
                    f"cannot open output {self.device or 'default'!r}: {exc}; "
                    "list devices with 'python -m sounddevice'"
                ) from None
            self._stream = stream
        return self._stream

    def write(self, pcm: bytes, rate_hz: int) -> None:
        with self._lock:
            stream = self._open(rate_hz)
        stream.write(resample(pcm, rate_hz, self.rate_hz or rate_hz))

    def stop(self) -> None:
        with self._lock:
            if self._stream is not None:
                self._stream.abort()
                self._stream.close()
                self._stream = None

    def close(self) -> None:
        self.stop()
