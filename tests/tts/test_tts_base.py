from __future__ import annotations

from sori.speaking.base import duration_s, split_sentences
from sori.speaking.earcon import earcon


def test_split_sentences_keeps_punctuation_and_drops_blanks():
    assert split_sentences("불을 켰어요. 또 필요하세요?  \n\n네!") == [
        "불을 켰어요.",
        "또 필요하세요?",
        "네!",
    ]
    assert split_sentences("   ") == []


def test_earcon_lengths_follow_rate():
    error = earcon("error", 16000)
    assert abs(duration_s(error, 16000) - 0.34) < 0.01
    assert len(earcon("error", 22050)) > len(error)
    assert max(abs(s) for s in __import__("array").array("h", error)) > 1000
