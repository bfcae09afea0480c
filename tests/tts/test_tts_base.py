from __future__ import annotations

from sori.tts.base import duration_s, float_to_pcm16, split_sentences
from sori.tts.earcon import earcon


def test_split_sentences_keeps_punctuation_and_drops_blanks():
    assert split_sentences("불을 켰어요. 또 필요하세요?  \n\n네!") == [
        "불을 켰어요.",
        "또 필요하세요?",
        "네!",
    ]
    assert split_sentences("   ") == []


def test_float_to_pcm16_clips_and_scales():
    pcm = float_to_pcm16([0.0, 1.0, -1.0, 2.0])
    assert len(pcm) == 8
    import array

    samples = array.array("h", pcm)
    assert list(samples) == [0, 32767, -32767, 32767]


def test_earcon_lengths_follow_rate():
    error = earcon("error", 16000)
    assert abs(duration_s(error, 16000) - 0.34) < 0.01
    assert len(earcon("error", 22050)) > len(error)
    assert max(abs(s) for s in __import__("array").array("h", error)) > 1000
