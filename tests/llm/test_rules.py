from __future__ import annotations

import pytest

from sori.thinking.rules import escalation_rule


@pytest.mark.parametrize(
    ("text", "deep", "fragment"),
    [
        ("Explain how vaccines work", False, "'explain'"),
        ("세종대왕의 역사를 알려줘", False, "'역사'"),
        ("Can you solve this for me", True, "'solve'"),
        ("뭐야? 그리고 왜야?", True, "several questions"),
        ("가" * 95, False, "long question"),
    ],
)
def test_escalation_rules(text, deep, fragment):
    rule = escalation_rule(text)
    assert rule is not None and rule.deep is deep and fragment in rule.reason


@pytest.mark.parametrize("text", ["거실 불 켜줘", "airplane mode", "오늘 몇 도야?", "hello"])
def test_everyday_text_fires_no_rule(text):
    assert escalation_rule(text) is None


def test_configured_words_add_to_the_rules():
    words = {"escalate_words": ("주식",), "deep_words": ("시뮬레이션",)}
    assert escalation_rule("주식 어때", **words).deep is False
    assert escalation_rule("시뮬레이션 해봐", **words).deep is True
    assert escalation_rule("주식 어때") is None


def test_the_length_rule_follows_its_setting():
    assert escalation_rule("가" * 30, min_chars=30).reason == "long question (30 ≥ 30 chars)"
    assert escalation_rule("가" * 29, min_chars=30) is None
