from __future__ import annotations

import builtins
import io
import sys
import threading

import numpy as np
import pytest
import soundfile
from fake_sounddevice import FakeInput

from sori.core.errors import AudioError, DependencyError
from sori.hearing.audio.format import RATE_HZ, frame_bytes, s16_to_float
from sori.hearing.audio.sources import FileSource, MicSource, RawSource


def test_file_source_frames_cover_the_file(tmp_path):
    path = tmp_path / "a.wav"
    soundfile.write(path, np.full(44_100, 0.25, np.float32), 44_100, subtype="PCM_16")
    frames = list(FileSource(path, frame_ms=30).frames())
    assert all(len(f.pcm) == frame_bytes(30) for f in frames)
    assert len(frames) == 34  # 1 s in 30 ms frames, the last one padded
    assert frames[5].start_ns == 150_000_000


def test_raw_stdin_is_resampled_in_a_stream():
    t = np.arange(8_000) / 8_000
    x = (0.5 * np.sin(2 * np.pi * 300 * t) * 32767).astype("<i2")
    stereo = np.stack([x, x], axis=1).tobytes()
    source = RawSource(io.BytesIO(stereo), "s16le", 8_000, channels=2, read_bytes=1000)
    frames = list(source.frames())
    pcm = b"".join(f.pcm for f in frames)
    assert abs(len(pcm) // 2 - RATE_HZ) <= frame_bytes(20) // 2
    spectrum = np.abs(np.fft.rfft(s16_to_float(pcm)))
    assert abs(np.argmax(spectrum) * RATE_HZ / (len(pcm) // 2) - 300) < 3


def test_raw_stdin_empty_or_misdescribed_is_refused():
    with pytest.raises(AudioError, match="no audio"):
        list(RawSource(io.BytesIO(b"")).frames())
    with pytest.raises(AudioError, match="unknown raw format"):
        RawSource(io.BytesIO(b"x"), "mp3")


def test_mic_without_portaudio_names_the_fix(monkeypatch):
    real_import = builtins.__import__

    def no_portaudio(name, *args, **kwargs):
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_portaudio)
    with pytest.raises(DependencyError, match="apt-get install libportaudio2"):
        MicSource().open()


def test_mic_captures_at_the_device_rate_and_resamples(monkeypatch):
    t = np.arange(48_000) / 48_000
    x = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    fake = FakeInput(np.split(x, 50))
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    mic = MicSource("usb", frame_ms=20).open()
    assert fake.opened["samplerate"] == 48_000 and fake.opened["device"] == "usb"
    frames = mic.frames()
    got = [next(frames) for _ in range(45)]  # about 0.9 s of the 1 s captured
    mic.close()
    assert [f.start_ns for f in got[:3]] == [0, 20_000_000, 40_000_000]
    pcm = b"".join(f.pcm for f in got[5:])
    spectrum = np.abs(np.fft.rfft(s16_to_float(pcm)))
    assert abs(np.argmax(spectrum) * RATE_HZ / (len(pcm) // 2) - 440) < 5


def test_mic_unknown_device_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "sounddevice", FakeInput([]))
    with pytest.raises(AudioError, match="python -m sounddevice"):
        MicSource("hw:9").open()


def test_a_device_that_will_not_open_says_what_to_check(monkeypatch):
    """PortAudio refuses the stream (another program holds the device, or its driver
    takes other channel counts): an AudioError that says how to find out, no traceback."""

    class Busy(FakeInput):
        def InputStream(self, **kwargs):  # noqa: N802 (sounddevice's name)
            raise self.PortAudioError("Error opening InputStream: Device unavailable [-9985]")

    monkeypatch.setitem(sys.modules, "sounddevice", Busy([]))
    with pytest.raises(AudioError) as refused:
        MicSource("usb").open()
    says = str(refused.value)
    assert "cannot open input device 'Fake USB mic' with 1 channel(s) at 48000 Hz" in says
    assert "Device unavailable" in says and "fuser -v /dev/snd/*" in says


def test_closing_a_microphone_nobody_read_returns(monkeypatch):
    """A microphone opened and refused at once (a board's channels checked after open)
    fills its queue before close: close must not wait for a reader that never comes."""
    fake = FakeInput([np.zeros(960, np.float32)] * 10)
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    mic = MicSource("usb", frame_ms=20, max_queue=3).open()
    closing = threading.Thread(target=mic.close, daemon=True)
    closing.start()
    closing.join(timeout=5)
    assert not closing.is_alive(), "close() blocked on a full queue"
    ends = [mic._queue.get_nowait() for _ in range(3)]
    assert ends[-1] is None and all(block is not None for block in ends[:-1])
