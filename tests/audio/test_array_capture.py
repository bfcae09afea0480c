"""Capturing a microphone array: the device opened with `audio.channels`, each channel
resampled and framed apart (a fake sounddevice stands in for the hardware)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from fake_sounddevice import FakeInput

from sori.core.errors import AudioError
from sori.hearing.audio.format import RATE_HZ
from sori.hearing.audio.sources import MicSource


def fake_array(blocks: list[np.ndarray], inputs: int = 4) -> FakeInput:
    """A 4-channel array at 48 kHz that cannot do 16 kHz."""
    return FakeInput(blocks, inputs, name="Fake array")


def test_the_array_is_opened_with_its_channels_and_each_is_resampled_apart(monkeypatch):
    t = np.arange(48_000) / 48_000
    tones = np.stack([0.3 * np.sin(2 * np.pi * f * t) for f in (300, 500, 700, 900)], axis=1)
    fake = fake_array(np.split(tones.astype(np.float32), 50))
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    mic = MicSource(frame_ms=20, channels=4).open()
    assert fake.opened["channels"] == 4 and fake.opened["samplerate"] == 48_000
    frames = mic.channel_frames(4)
    got = [next(frames) for _ in range(45)]
    mic.close()
    assert [f.start_ns for f in got[:2]] == [0, 20_000_000]
    assert all(f.samples.shape == (320, 4) for f in got)
    samples = np.concatenate([f.samples for f in got[5:]])
    peaks = np.argmax(np.abs(np.fft.rfft(samples, axis=0)), axis=0) * RATE_HZ / len(samples)
    assert np.allclose(peaks, (300, 500, 700, 900), atol=5)


def test_a_device_with_fewer_channels_than_the_array_is_refused_by_name(monkeypatch):
    monkeypatch.setitem(sys.modules, "sounddevice", fake_array([], inputs=2))
    with pytest.raises(AudioError, match="'Fake array' has 2 channel.*audio.channels is 4"):
        MicSource(channels=4).open()
