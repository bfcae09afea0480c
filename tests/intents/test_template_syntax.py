"""Home Assistant's template syntax in our matcher: each construct in a pack of its own."""

from __future__ import annotations

import pytest

from sori.core.home import Area, Device, Home
from sori.understanding.intents import load_presets

PACK = """
language: ko
skip_words: [제발]
expansion_rules:
  laundry: "(빨래|세탁물)"
lists:
  program:
    values:
      - in: "(표준|일반) 코스"
        out: standard
      - in: 울 코스
        out: wool
  spin: {range: {from: 400, to: 1400, step: 200}}
  memo: {wildcard: true}
intents:
  StartLaundry:
    data:
      - sentences:
          - "(<laundry>;건조기) 돌려"
          - "세탁기 {program} [로] 돌려"
          - "탈수 {spin:rpm} [으로] 맞춰"
          - "세탁기 {1..3:rinse}번 헹굼"
        slots: {domain: washer}
  SaveMemo:
    data:
      - sentences:
          - "메모 {memo:text} 저장"
  LaundryHere:
    data:
      - sentences:
          - "여기 [있는] 세탁기 켜"
        requires_context: {area: {slot: true}}
        excludes_context: {area: garage}
"""


@pytest.fixture(scope="module")
def pack_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("packs") / "laundry.yaml"
    path.write_text(PACK, encoding="utf-8")
    return path


def presets_in(pack_path, speaker_area: str):
    home = Home(
        areas=(Area("utility", "다용도실"), Area("garage", "차고")),
        devices=(Device("switch.washer", "세탁기", "switch", "utility"),),
        speaker_area=speaker_area,
    )
    return load_presets("ko", home, extra_packs=[str(pack_path)], include_home_assistant=False)


@pytest.fixture(scope="module")
def presets(pack_path):
    return presets_in(pack_path, "utility")


def test_permutation_in_either_order(presets):
    assert presets.match("빨래 건조기 돌려").intent == "StartLaundry"
    assert presets.match("건조기 세탁물 돌려 줘").intent == "StartLaundry"


def test_list_in_out_values_and_fixed_slots(presets):
    found = presets.match("세탁기 일반 코스로 돌려")
    assert found.slots == {"domain": "washer", "program": "standard"}


def test_range_with_step_and_inline_range(presets):
    assert presets.match("탈수 천이백으로 맞춰").slots["rpm"] == 1200
    assert presets.match("탈수 1300으로 맞춰") is None  # not on a 200 step
    assert presets.match("세탁기 2번 헹굼").slots["rinse"] == 2
    assert presets.match("세탁기 5번 헹굼") is None


def test_wildcard_keeps_the_spoken_words_with_numbers_as_digits(presets):
    assert presets.match("메모 우유 두 개 사기 저장해 줘").slots["text"] == "우유 2개 사기"


def test_skip_words_are_ignored(presets):
    assert presets.match("제발 빨래 건조기 돌려").intent == "StartLaundry"


def test_required_and_excluded_context(presets, pack_path):
    assert presets.match("여기 세탁기 켜").slots["area"] == "다용도실"
    assert presets_in(pack_path, "garage").match("여기 세탁기 켜") is None
