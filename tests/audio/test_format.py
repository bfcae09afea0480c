"""Conversion of any input into 16 kHz mono s16le, and clear refusals of bad input."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from sori.core.errors import AudioError
from sori.hearing.audio.format import RATE_HZ, decode_raw, read_file, s16_to_float, to_pipeline


def sine(rate_hz: int, seconds: float, freq_hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(rate_hz * seconds)) / rate_hz
    return (0.5 * np.sin(2 * np.pi * freq_hz * t)).astype(np.float32)


def peak_hz(pcm: bytes) -> float:
    x = s16_to_float(pcm)
    spectrum = np.abs(np.fft.rfft(x))
    return float(np.argmax(spectrum) * RATE_HZ / len(x))


@pytest.mark.parametrize(
    ("rate_hz", "channels", "subtype"),
    [
        (44_100, 2, "PCM_16"),
        (8_000, 1, "PCM_U8"),
        (48_000, 1, "FLOAT"),
        (22_050, 1, "PCM_24"),
        (16_000, 1, "PCM_32"),
        (16_000, 1, "PCM_16"),
    ],
)
def test_any_wav_becomes_16k_mono_with_the_same_pitch(tmp_path, rate_hz, channels, subtype):
    x = sine(rate_hz, 1.0)
    data = np.stack([x] * channels, axis=1) if channels > 1 else x
    path = tmp_path / "in.wav"
    soundfile.write(path, data, rate_hz, subtype=subtype)
    pcm = read_file(path)
    assert abs(len(pcm) // 2 - RATE_HZ) <= 2  # one second
    assert abs(peak_hz(pcm) - 440.0) < 3.0
    level = np.abs(s16_to_float(pcm)).max()
    assert 0.4 < level < 0.6  # neither clipped nor lost


def test_flac_is_read(tmp_path):
    path = tmp_path / "in.flac"
    soundfile.write(path, sine(32_000, 0.5), 32_000, format="FLAC")
    assert abs(len(read_file(path)) // 2 - RATE_HZ // 2) <= 2


def test_a_16_khz_16_bit_recording_is_heard_sample_for_sample(tmp_path):
    """A file replays exactly as the microphone (or a Wyoming client) gave it: the
    recognizer is sensitive enough that one step on loud samples changes a word."""
    every_value = np.arange(-32768, 32768, dtype="<i2")
    path = tmp_path / "in.wav"
    soundfile.write(path, every_value, RATE_HZ, subtype="PCM_16")
    assert read_file(path) == every_value.tobytes()
    assert decode_raw(every_value.tobytes(), "s16le", RATE_HZ).shape == (65536, 1)
    assert to_pipeline(s16_to_float(every_value.tobytes()), RATE_HZ) == every_value.tobytes()


def test_stereo_is_averaged_not_summed():
    left = sine(RATE_HZ, 0.1)
    pcm = to_pipeline(np.stack([left, -left], axis=1), RATE_HZ)
    assert np.abs(s16_to_float(pcm)).max() < 1e-3


def test_raw_formats_decode_to_the_same_signal():
    x = sine(RATE_HZ, 0.1)
    s16 = (x * 32767).astype("<i2").tobytes()
    u8 = (x * 127 + 128).astype("u1").tobytes()
    f32 = x.astype("<f4").tobytes()
    for data, fmt, tolerance in ((s16, "s16le", 1e-3), (u8, "u8", 2e-2), (f32, "f32le", 1e-6)):
        assert np.allclose(decode_raw(data, fmt, RATE_HZ)[:, 0], x, atol=tolerance), fmt


def test_raw_drops_a_trailing_partial_sample():
    assert decode_raw(b"\x00\x01\x02", "s16le", RATE_HZ).shape == (1, 1)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"this is not audio at all, just text\n" * 10, "not a readable audio file"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "broken or truncated WAV"),
    ],
)
def test_bad_files_are_refused_with_a_clear_message(tmp_path, content, message):
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    with pytest.raises(AudioError, match=message) as caught:
        read_file(path)
    assert str(path) in str(caught.value)


def test_zero_length_recording_is_refused(tmp_path):
    path = tmp_path / "zero.wav"
    soundfile.write(path, np.zeros(0, np.float32), RATE_HZ, subtype="PCM_16")
    with pytest.raises(AudioError, match="no audio samples"):
        read_file(path)


def test_truncated_data_is_read_as_far_as_it_goes(tmp_path):
    path = tmp_path / "cut.wav"
    soundfile.write(path, sine(RATE_HZ, 1.0), RATE_HZ, subtype="PCM_16")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # header still claims one second
    pcm = read_file(path)
    assert 0 < len(pcm) // 2 < RATE_HZ
    assert abs(peak_hz(pcm) - 440.0) < 3.0


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(AudioError, match="no such file"):
        read_file(tmp_path / "nope.wav")
    with pytest.raises(AudioError, match="is a folder"):
        read_file(tmp_path)
