"""A wildcard anchored on what follows it (compile.anchor_wildcards) ends only where the
rest of its template can start; it must understand exactly what the unanchored wildcard
does, only without trying every split of every sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from sori.understanding.intents import compile as compiling
from sori.understanding.intents import load_presets
from sori.understanding.intents.slots import ListValue, WildcardList

NEGATIVES = Path(__file__).with_name("negatives_ko.txt")
SENTENCES = [
    "라면 타이머 삼 분", "라면 삼 분 타이머 맞춰 줘", "스파게티 면 타이머 십일 분",
    "라면을 타이머 삼 분", "계란 칠 분 삼십 초 타이머", "라면 타이머 취소", "그 타이머 취소",
    "우유 쇼핑 리스트에 추가해", "계란이랑 우유를 쇼핑 목록에 추가", "타이머 삼 분",
    "삼 분 타이머", "온도 30 로 설정", "거실 불 50%로", "타이머 몇 분 남았어?", "라면 먹고 싶다",
    "오 분 타이머 삼 분", "3분", "타이머", "분 타이머",
]  # fmt: skip


@pytest.fixture(scope="module")
def both():
    anchored = load_presets("ko")
    keep = compiling.anchor_wildcards
    compiling.anchor_wildcards = lambda root, lists: None
    try:
        plain = load_presets("ko")
    finally:
        compiling.anchor_wildcards = keep
    return anchored, plain


def test_the_named_timer_wildcard_is_anchored(both):
    anchored, plain = both
    kinds = [k for k, v in anchored.lists.items() if isinstance(v, WildcardList) and v.follow]
    assert any(k.startswith("timer_name@") for k in kinds)
    assert not any(isinstance(v, WildcardList) and v.follow for v in plain.lists.values())


def test_anchored_and_plain_wildcards_understand_the_same(both):
    anchored, plain = both
    everyday = [line.strip() for line in NEGATIVES.read_text(encoding="utf-8").splitlines()]
    for text in SENTENCES + [t for t in everyday if t and not t.startswith("#")]:
        a, p = anchored.match(text), plain.match(text)
        assert (a and (a.intent, a.slots)) == (p and (p.intent, p.slots)), text


def test_an_anchored_wildcard_ends_before_its_follower_a_number_and_its_unit_or_a_particle():
    wild = WildcardList(
        frozenset("타"), may_end=False, particles=("을",), after_number=frozenset("분")
    )
    ends = [end for end, value in wild.matches("라면을타이머3분", 0)]
    assert ends == [6, 3, 2]  # before 3분, before 타이머, before 을 (then 타이머)
    assert all(isinstance(v, ListValue) for _, v in wild.matches("라면타이머", 0))
    assert list(wild.matches("라면먹고싶다", 0)) == []
    assert [e for e, _ in WildcardList().matches("abc", 0)] == [3, 2, 1]  # unanchored
