from __future__ import annotations

import shutil

import pytest

from sori.core.errors import ModelError
from sori.speaking.base import duration_s
from sori.speaking.sherpa_vits import SherpaVitsVoice, find_files


def test_speaks_with_a_real_vits_model(vits_model_dir):
    voice = SherpaVitsVoice(vits_model_dir)
    assert voice.rate_hz == 22050
    chunks = list(voice.synthesize("The living room light is on. Anything else?"))
    assert len(chunks) == 2
    assert all(0.3 < duration_s(c, voice.rate_hz) < 5 for c in chunks)


def test_korean_text_is_phonemized_with_the_korean_espeak_voice(vits_model_dir):
    # The Korean KSS voices are espeak-phonemized with voice "ko": the same path.
    voice = SherpaVitsVoice(vits_model_dir, voice="ko")
    (audio,) = voice.synthesize("거실 불을 켰어요.")
    assert duration_s(audio, voice.rate_hz) > 0.5
    assert voice._phonemes is not None
    assert voice._phonemes.codepoints("불") != voice._phonemes.codepoints("켜")


def test_faster_speed_makes_shorter_audio(vits_model_dir):
    normal = SherpaVitsVoice(vits_model_dir)
    fast = SherpaVitsVoice(vits_model_dir, speed=1.8)
    (a,) = normal.synthesize("Turning on the kitchen lights.")
    (b,) = fast.synthesize("Turning on the kitchen lights.")
    assert len(b) < 0.8 * len(a)


def test_empty_and_missing_folders_name_the_key(tmp_path):
    with pytest.raises(ModelError, match=r"tts\.vits\.model_dir is empty"):
        find_files("")
    with pytest.raises(ModelError, match="does not exist.*kss"):
        find_files(tmp_path / "vits-mimic3-ko_KO-kss_low")
    with pytest.raises(ModelError, match=r"no \*\.onnx"):
        find_files(tmp_path)


def test_folder_without_tokens_is_refused(tmp_path, vits_model_dir):
    shutil.copy(vits_model_dir / "en_US-joe-medium.onnx", tmp_path / "x.onnx")
    with pytest.raises(ModelError, match="tokens.txt"):
        SherpaVitsVoice(tmp_path)


def test_speaker_out_of_range_is_refused(vits_model_dir):
    with pytest.raises(ModelError, match=r"tts\.vits\.speaker = 3.*1 speaker"):
        SherpaVitsVoice(vits_model_dir, speaker=3)


def test_bad_espeak_data_folder_is_refused(vits_model_dir, tmp_path):
    with pytest.raises(ModelError, match=r"tts\.vits\.data_dir"):
        SherpaVitsVoice(vits_model_dir, data_dir=tmp_path)
