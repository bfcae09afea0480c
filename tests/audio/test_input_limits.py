"""Input limits: sample rates 8-192 kHz and 1-32 channels, refused from the header before
anything is decoded or allocated; broken headers give an AudioError and nothing else."""

from __future__ import annotations

import contextlib
import io
import struct
import tracemalloc
import wave

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sori.core.errors import AudioError
from sori.hearing.audio import format as audio_format
from sori.hearing.audio.format import read_file, to_pipeline, write_wav
from sori.hearing.audio.sources import RawSource


def wav_header(rate_hz: int, channels: int = 1, width: int = 2, frames: int = 16_000) -> bytes:
    """A RIFF/WAVE header claiming the given format, followed by `frames` of silence."""
    data = bytes(frames * channels * width)
    fmt = struct.pack(
        "<HHIIHH",
        1,
        channels,
        rate_hz,
        (rate_hz * channels * width) % 2**32,
        channels * width,
        8 * width,
    )
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


@pytest.mark.parametrize("rate_hz", [1, 100, 7_999, 192_001, 2_000_000_000])
def test_a_wav_claiming_an_absurd_rate_is_refused_before_decoding(tmp_path, rate_hz):
    path = tmp_path / "odd.wav"
    path.write_bytes(wav_header(rate_hz))
    tracemalloc.start()
    try:
        with pytest.raises(AudioError, match=f"sample rate {rate_hz} Hz is outside 8000-192000"):
            read_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # today 1 Hz → 16 kHz asks for 3.7 GiB


@pytest.mark.parametrize("rate_hz", [1, 192_001])
def test_the_standard_library_reader_refuses_them_too(tmp_path, rate_hz):
    path = tmp_path / "odd.wav"
    path.write_bytes(wav_header(rate_hz))
    with pytest.raises(AudioError, match="is outside 8000-192000"):
        audio_format._decode_wave(path)


def test_the_limits_themselves_are_accepted(tmp_path):
    for rate_hz in (8_000, 192_000):
        path = tmp_path / f"{rate_hz}.wav"
        path.write_bytes(wav_header(rate_hz, frames=rate_hz // 10))
        assert len(read_file(path)) == 2 * 1_600  # 0.1 s at 16 kHz


def test_channels_beyond_32_are_refused(tmp_path):
    path = tmp_path / "many.wav"
    path.write_bytes(wav_header(16_000, channels=40, frames=10))
    with pytest.raises(AudioError, match="40 channels is outside 1-32"):
        read_file(path)
    with pytest.raises(AudioError, match="channels is outside 1-32"):
        RawSource(io.BytesIO(b""), channels=33)


def test_a_header_claiming_too_many_samples_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(audio_format, "MAX_DECODED_BYTES", 1 << 20)
    path = tmp_path / "long.wav"
    write_wav(path, bytes(2 * 16_000 * 20))  # 20 s: 1.2 MiB as float
    with pytest.raises(AudioError, match="split the recording"):
        read_file(path)


@pytest.mark.parametrize("rate_hz", [0, 1, -16_000, 10_000_000_000_000_000])
def test_raw_and_array_rates_are_refused_at_once(rate_hz):
    with pytest.raises(AudioError, match="is outside 8000-192000 Hz"):
        RawSource(io.BytesIO(b"\0" * 64), rate_hz=rate_hz)
    with pytest.raises(AudioError, match="is outside 8000-192000 Hz"):
        to_pipeline(np.zeros(10, np.float32), rate_hz)


# -- property: random bytes and mutated headers give an AudioError or audio, nothing else --

VALID = wav_header(16_000, frames=800)


@st.composite
def _mutated(draw):
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, 47))  # the header: RIFF, fmt and data chunk fields
        data[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):  # and sometimes a whole field set to an extreme
        at = draw(st.sampled_from([4, 22, 24, 28, 32, 34, 40]))
        width = 2 if at in (22, 32, 34) else 4
        value = draw(st.sampled_from([0, 1, 2 ** (8 * width) - 1, 2 ** (8 * width - 1)]))
        data[at : at + width] = value.to_bytes(width, "little")
    return bytes(data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data)


def _read_checked(path) -> None:
    tracemalloc.start()
    try:
        try:
            pcm = read_file(path)
        except AudioError:
            pcm = b""
        with contextlib.suppress(AudioError):  # the reader for machines without libsndfile
            pcm = to_pipeline(*audio_format._decode_wave(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak >> 20} MiB for a {path.stat().st_size}-byte file"
    assert isinstance(pcm, bytes)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_mutated() | st.binary(max_size=200))
def test_any_header_gives_audio_or_an_audio_error(tmp_path, data):
    path = tmp_path / "fuzz.wav"
    path.write_bytes(data)
    if data:  # an empty file is refused before the readers are asked
        _read_checked(path)
    else:
        with pytest.raises(AudioError, match="empty file"):
            read_file(path)


def test_wave_module_sanity():
    with wave.open(io.BytesIO(VALID)) as w:  # the hand-made header is a valid WAV
        assert (w.getframerate(), w.getnchannels(), w.getnframes()) == (16_000, 1, 800)
