from __future__ import annotations

import pytest

from sori.thinking.sentences import SentenceSplitter, detect_language


def split_stream(pieces: list[str], max_chars: int = 160) -> list[str]:
    splitter = SentenceSplitter(max_chars)
    out = []
    for piece in pieces:
        out += splitter.feed(piece)
    return out + splitter.flush()


def by_chars(text: str) -> list[str]:
    return list(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("오늘은 맑아요. 내일은 비가 와요!", ["오늘은 맑아요.", "내일은 비가 와요!"]),
        ("정말요? 네, 맞아요.", ["정말요?", "네, 맞아요."]),
        ("It is 3.5 degrees. Take a coat.", ["It is 3.5 degrees.", "Take a coat."]),
        ("Dr. Kim said hi. Bye.", ["Dr. Kim said hi.", "Bye."]),
        ("Ask J. Smith, e.g. tomorrow. Done.", ["Ask J. Smith, e.g. tomorrow.", "Done."]),
        ('그가 "좋아요."라고 했어요. 끝.', ['그가 "좋아요."라고 했어요.', "끝."]),
        ('He said "yes." Then left.', ['He said "yes."', "Then left."]),
        ("첫째 줄\n둘째 줄", ["첫째 줄", "둘째 줄"]),
        ("좋아요。다음！", ["좋아요。", "다음！"]),
        ("Wait... what? Yes!!", ["Wait...", "what?", "Yes!!"]),
        ("1. Boil water. 2. Add rice.", ["1. Boil water.", "2. Add rice."]),
        (
            "오늘 날씨가 정말 좋습니다 산책하기 좋아요",
            ["오늘 날씨가 정말 좋습니다", "산책하기 좋아요"],
        ),
        ("안녕~ 반가워", ["안녕~", "반가워"]),
    ],
)
def test_boundaries_whole_and_character_by_character(text, expected):
    assert split_stream([text]) == expected
    assert split_stream(by_chars(text)) == expected


def test_a_sentence_is_released_as_soon_as_the_next_character_decides():
    splitter = SentenceSplitter()
    assert splitter.feed("Hello there.") == []  # "3." could still become "3.5"
    assert splitter.feed(" How") == ["Hello there."]
    assert splitter.feed(" are you?") == []
    assert splitter.flush() == ["How are you?"]


def test_a_run_on_is_cut_at_its_last_comma():
    text = "이건 아주 긴 문장인데, " * 10
    out = split_stream([text], max_chars=40)
    assert len(out) > 1
    assert all(len(s) <= 40 for s in out)
    assert "".join(s.replace(" ", "") for s in out) == text.replace(" ", "")


def test_flush_returns_the_tail_and_resets():
    splitter = SentenceSplitter()
    splitter.feed("끝나지 않은 문장")
    assert splitter.flush() == ["끝나지 않은 문장"]
    assert splitter.flush() == []


def test_detect_language():
    assert detect_language("거실 불 켜줘") == "ko"
    assert detect_language("turn on the TV 지금") == "ko"
    assert detect_language("what time is it") == "en"
    assert detect_language("12:30", default="en") == "en"
    assert detect_language("12:30") == "ko"
