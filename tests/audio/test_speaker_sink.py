"""SpeakerSink with a stand-in for sounddevice (the sound card is the hardware faked)."""

from __future__ import annotations

import sys
import types
from array import array

import pytest

from sori.core.errors import AudioError, DependencyError
from sori.hearing.audio.sinks import SpeakerSink


class FakeStream:
    def __init__(self, samplerate, channels, dtype, device):
        if device == "missing":
            raise ValueError("No output device matching 'missing'")
        self.opened = (samplerate, channels, dtype, device)
        self.written: list[bytes] = []
        self.aborted = False

    def start(self):
        pass

    def write(self, data):
        self.written.append(bytes(data))

    def abort(self):
        self.aborted = True

    def close(self):
        pass


@pytest.fixture
def sounddevice(monkeypatch):
    module = types.ModuleType("sounddevice")
    module.streams = []

    def make(**kw):
        stream = FakeStream(**kw)
        module.streams.append(stream)
        return stream

    module.RawOutputStream = make
    monkeypatch.setitem(sys.modules, "sounddevice", module)
    return module


def test_plays_at_the_first_rate_and_reopens_after_stop(sounddevice):
    sink = SpeakerSink()
    pcm = array("h", [100] * 2205).tobytes()
    sink.write(pcm, 22050)
    sink.write(array("h", [100] * 1600).tobytes(), 16000)  # resampled to 22050
    (stream,) = sounddevice.streams
    assert stream.opened == (22050, 1, "int16", None)
    assert [len(w) for w in stream.written] == [4410, 4410]
    sink.stop()
    assert stream.aborted
    sink.write(pcm, 22050)
    assert len(sounddevice.streams) == 2


def test_unknown_device_names_the_fix(sounddevice):
    with pytest.raises(AudioError, match="python -m sounddevice"):
        SpeakerSink("missing").write(b"\0\0", 16000)


def test_missing_portaudio_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "sounddevice", None)  # import fails
    with pytest.raises(DependencyError, match="libportaudio2"):
        SpeakerSink()
