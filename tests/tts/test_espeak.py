from __future__ import annotations

import pytest

from sori.core.errors import DependencyError
from sori.speaking.base import duration_s
from sori.speaking.espeak import EspeakVoice


def test_korean_sentences_become_separate_chunks_of_speech():
    voice = EspeakVoice("ko")
    chunks = list(voice.synthesize("거실 불을 켰어요. 또 필요하세요?"))
    assert len(chunks) == 2
    assert voice.rate_hz == 22050
    assert all(0.5 < duration_s(c, voice.rate_hz) < 5 for c in chunks)
    assert all(len(c) % 2 == 0 for c in chunks)


def test_longer_text_takes_longer_to_say():
    voice = EspeakVoice("ko")
    (short,) = voice.synthesize("네")
    (long,) = voice.synthesize("거실 조명과 안방 에어컨을 모두 껐어요")
    assert len(long) > 2 * len(short)


def test_unknown_voice_is_refused_with_the_fix():
    with pytest.raises(DependencyError, match="espeak-ng --voices"):
        EspeakVoice("xx-nonexistent")


def test_missing_program_names_the_package():
    with pytest.raises(DependencyError, match="apt-get install espeak-ng"):
        EspeakVoice("ko", executable="espeak-ng-not-here")
