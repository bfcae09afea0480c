"""The whole-stream denoisers (audio.denoise = "deepfilter", "rnnoise", "webrtc"), for real:
each on real read Korean mixed with white noise, heard by vosk."""

from __future__ import annotations

import numpy as np
import pytest

from sori.core.config import parse_config
from sori.core.errors import ConfigError
from sori.hearing.audio.augment import make_noise, to_pcm16
from sori.hearing.audio.denoise import build_denoiser, denoised
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


@pytest.mark.parametrize("name", ["rnnoise", "webrtc"])
def test_the_lighter_denoisers_keep_frames_and_make_white_noise_less_harmful(noisy_frames, name):
    denoiser = build_denoiser(name)
    cleaned = list(denoised(noisy_frames, denoiser))
    assert [(f.start_ns, len(f.pcm)) for f in cleaned[: len(noisy_frames)]] == [
        (f.start_ns, len(f.pcm)) for f in noisy_frames
    ]
    before, _ = character_errors(TRANSCRIPT, heard(noisy_frames))
    after, _ = character_errors(TRANSCRIPT, heard(cleaned))
    assert after < before  # measured: 23 → 7 (rnnoise), 23 → 18 (webrtc) errors in 31


def test_off_passes_frames_through_and_an_unknown_front_end_is_refused(noisy_frames):
    assert build_denoiser("off") is None
    assert build_denoiser("auto") is None  # per utterance, in the pipeline: the VAD hears raw
    assert list(denoised(noisy_frames[:3], None)) == noisy_frames[:3]
    with pytest.raises(ConfigError, match="audio.denoise must be off, deepfilter, rnnoise, "):
        parse_config({"audio": {"denoise": "speex"}})
    with pytest.raises(ConfigError, match="audio.denoise must be one of off, deepfilter, "):
        build_denoiser("speex")


def test_the_pi_profiles_run_rnnoise_for_auto_and_a_choice_by_hand_wins():
    from sori.provisioning.board import apply_board

    pi4 = parse_config({"board": {"profile": "pi4"}})
    assert apply_board(pi4).audio.denoise_engine == "rnnoise"
    assert apply_board(parse_config({"board": {"profile": "x86"}})).audio.denoise_engine == (
        "deepfilter"
    )
    chosen = parse_config({"board": {"profile": "pi5"}, "audio": {"denoise_engine": "webrtc"}})
    assert apply_board(chosen).audio.denoise_engine == "webrtc"
