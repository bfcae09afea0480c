"""Cutting a sentence of several commands at its connectives (pure; no packs loaded)."""

from __future__ import annotations

import pytest

from sori.understanding.intents.splitting import continues, request_form, split_commands


@pytest.mark.parametrize(
    ("stem", "form"),
    [
        ("켜", "켜"), ("끄", "꺼"), ("닫", "닫아"), ("열", "열어"), ("틀", "틀어"),
        ("올리", "올려"), ("내리", "내려"), ("맞추", "맞춰"), ("멈추", "멈춰"), ("잠그", "잠가"),
        ("누르", "눌러"), ("하", "해"), ("정지하", "정지해"), ("켜주", "켜줘"), ("되", "돼"),
    ],
)  # fmt: skip
def test_a_stem_takes_the_request_form_a_sentence_ends_in(stem, form):
    assert request_form(stem) == form


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("거실 불 켜고 에어컨 꺼 줘", ["거실 불 켜", "에어컨 꺼 줘"]),
        ("불 다 끄고 커튼 닫아줘", ["불 다 꺼", "커튼 닫아줘"]),
        ("거실 불 켜 주고 에어컨 꺼", ["거실 불 켜 줘", "에어컨 꺼"]),
        ("거실 불 켜 그리고 에어컨 꺼", ["거실 불 켜", "에어컨 꺼"]),
        ("거실 불 켜고 나서 커튼 닫아줘", ["거실 불 켜", "커튼 닫아줘"]),
        ("티비 끄고, 불 다 끄고 커튼 닫아", ["티비 꺼", "불 다 꺼", "커튼 닫아"]),
        ("공기청정기 정지하고 창문 열어", ["공기청정기 정지해", "창문 열어"]),
        ("turn on the light and close the curtains", ["turn on the light", "close the curtains"]),
        ("turn off the fan and then lock the door", ["turn off the fan", "lock the door"]),
    ],
)
def test_commands_are_cut_at_connectives(text, parts):
    assert [p.text for p in split_commands(text)] == parts


@pytest.mark.parametrize(
    "text",
    [
        "창고 불 켜줘",
        "냉장고 온도 알려줘",
        "불 켜고 싶어",
        "티비 보고 있어",
        "거실 불 켜고",
        "turn on the kitchen and living room lights",
    ],
)
def test_a_noun_or_an_auxiliary_is_no_connective(text):
    assert [p.text for p in split_commands(text)] == [text]


def test_each_part_keeps_the_words_as_said():
    said = [p.said for p in split_commands("불 다 끄고 커튼 닫아줘")]
    assert said == ["불 다 끄고", "커튼 닫아줘"]


@pytest.mark.parametrize(
    ("text", "shared"),
    [
        ("거실 불하고 안방 불 꺼줘", ["거실 불", ""]),
        ("거실 불 하고 안방 불 꺼줘", ["거실 불", ""]),
        ("거실이랑 안방 불 꺼줘", ["거실", ""]),
        ("티비랑 에어컨 꺼줘", ["티비", ""]),
        ("거실이랑 안방이랑 주방 불 꺼줘", ["거실", "안방", ""]),
        ("공기청정기 정지하고 창문 열어", ["공기청정기 정지", ""]),  # or a verb: both readings
        ("거실 불 켜고 에어컨 꺼 줘", ["", ""]),  # a verb's -고 joins no target
    ],
)
def test_targets_joined_by_hago_or_irang_wait_for_the_verb_after_them(text, shared):
    assert [p.shared for p in split_commands(text)] == shared


@pytest.mark.parametrize("text", ["노랑 불 켜줘", "거실 불 파랑 해줘", "거실이랑"])
def test_a_colour_or_a_last_word_is_no_join(text):
    assert [p.text for p in split_commands(text)] == [text]


@pytest.mark.parametrize(
    ("text", "more"),
    [
        ("거실 불 켜고", True),
        ("거실 불 켜 고", True),
        ("거실 불 켜 그리고", True),
        ("거실 불하고", True),
        ("거실이랑", True),
        ("거실 불이랑", True),
        ("거실 불 켜고 에어컨", True),
        ("turn on the light and", True),
        ("거실 불 켜", False),
        ("거실 불 켜 줘", False),
        ("창고", False),
        ("노랑", False),
        ("", False),
    ],
)
def test_a_partial_that_ends_in_a_connective_continues(text, more):
    assert continues(text) is more
