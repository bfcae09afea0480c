from __future__ import annotations

import wave
from array import array

import pytest

from sori.core.errors import AudioError
from sori.hearing.audio.sinks import WavSink, resample


def _tone(n: int) -> bytes:
    return array("h", [(i % 50) * 100 for i in range(n)]).tobytes()


def test_wav_sink_writes_what_it_is_given(tmp_path):
    sink = WavSink(tmp_path / "out.wav")
    sink.write(_tone(1600), 16000)
    sink.write(_tone(800), 16000)
    sink.close()
    with wave.open(str(tmp_path / "out.wav")) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16000, 1, 2)
        assert wav.getnframes() == 2400
        assert wav.readframes(1600) == _tone(1600)


def test_later_audio_at_another_rate_is_resampled(tmp_path):
    sink = WavSink(tmp_path / "out.wav")
    sink.write(_tone(2205), 22050)
    sink.write(_tone(1600), 16000)
    sink.close()
    with wave.open(str(tmp_path / "out.wav")) as wav:
        assert wav.getframerate() == 22050
        assert wav.getnframes() == 2205 + 2205


def test_closing_without_audio_leaves_an_empty_valid_file(tmp_path):
    sink = WavSink(tmp_path / "silent.wav")
    sink.close()
    with wave.open(str(tmp_path / "silent.wav")) as wav:
        assert wav.getnframes() == 0


def test_unwritable_path_is_an_audio_error(tmp_path):
    (tmp_path / "file").write_text("x")
    sink = WavSink(tmp_path / "file" / "out.wav")
    with pytest.raises(AudioError, match="cannot write"):
        sink.write(_tone(10), 16000)


def test_resample_keeps_duration_and_shape():
    src = array("h", [0, 1000, 2000, 3000] * 400).tobytes()
    out = resample(src, 16000, 8000)
    assert len(out) == len(src) // 2
    assert resample(src, 16000, 16000) is src
