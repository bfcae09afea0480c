"""Quantifiers (issue 27): 모든, 전부, 다, 전체, 집에 있는 … 전부 reach every device of the
kind in the home, as `name: all` with no area; an area named keeps them in that area; and
sentences that only contain a quantifier act on nothing. Through `sori intent`'s path
(Presets.match), then what the action registry resolves the slots to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sori.acting.actions.registry import resolve

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"
EVERY_LIGHT = ["light.living_room", "light.bedroom", "light.kitchen", "light.bathroom"]


@pytest.mark.parametrize(
    ("text", "intent", "slots", "reply"),
    [
        ("모든 불을 파란색으로 바꿔 줘", "HassLightSet", {"color": "blue"},
         "모든 조명 색을 바꿨어요"),
        ("불 전부 노란색으로 해 줘", "HassLightSet", {"color": "yellow"},
         "모든 조명 색을 바꿨어요"),
        ("집에 있는 조명 전부 삼십 퍼센트로", "HassLightSet", {"brightness": 30},
         "모든 조명 밝기를 30%로 맞췄어요"),
        ("모든 불 꺼 줘", "HassTurnOff", {}, "모든 조명을 껐어요"),
        ("불 다 꺼", "HassTurnOff", {}, "모든 조명을 껐어요"),
        ("집 안 불 다 꺼", "HassTurnOff", {}, "모든 조명을 껐어요"),
        ("집 안에 있는 불 싹 다 꺼 줘", "HassTurnOff", {}, "모든 조명을 껐어요"),
        ("우리 집 조명 전체 켜 줘", "HassTurnOn", {}, "모든 조명을 켰어요"),
        ("전체 조명 켜", "HassTurnOn", {}, "모든 조명을 켰어요"),
        ("모든 불 밝게 해 줘", "HassLightSet", {"brightness_step": "up"},
         "모든 조명을 더 밝게 했어요"),
    ],
)  # fmt: skip
def test_every_light_of_the_home(presets, text, intent, slots, reply):
    found = presets.match(text)
    assert found is not None, text
    assert found.intent == intent
    assert found.slots == {"domain": "light", "name": "all", **slots}, text
    assert found.response == reply
    assert [d.id for d in resolve(presets.home, found.slots)] == EVERY_LIGHT


@pytest.mark.parametrize(
    ("text", "intent", "slots", "reached", "reply"),
    [
        ("모든 에어컨 꺼", "HassTurnOff", {"domain": "climate"},
         ["climate.living_room", "climate.bedroom"], "모든 에어컨을 껐어요"),
        ("에어컨 전부 꺼 줘", "HassTurnOff", {"domain": "climate"},
         ["climate.living_room", "climate.bedroom"], "모든 에어컨을 껐어요"),
        ("에어컨 다 이십육 도로 맞춰 줘", "HassClimateSetTemperature",
         {"domain": "climate", "temperature": 26},
         ["climate.living_room", "climate.bedroom"], "온도를 26도로 맞췄어요"),
        ("집에 있는 커튼 전부 닫아 줘", "HassTurnOff",
         {"domain": "cover", "device_class": "curtain"},
         ["cover.living_room_curtain"], "모든 커튼을 닫았어요"),
        ("모든 커튼 열어", "HassTurnOn", {"domain": "cover", "device_class": "curtain"},
         ["cover.living_room_curtain"], "모든 커튼을 열었어요"),
        ("모든 문 잠가 줘", "HassTurnOn", {"domain": "lock"}, ["lock.front_door"],
         "모든 문을 잠갔어요"),
        ("티비 다 꺼", "HassTurnOff", {"domain": "media_player"},
         ["media_player.living_room_tv"], "모든 티비를 껐어요"),
        ("가습기 전부 켜", "HassTurnOn", {"domain": "humidifier"}, ["humidifier.bedroom"],
         "모든 가습기를 켰어요"),
    ],
)  # fmt: skip
def test_every_device_of_other_kinds(presets, text, intent, slots, reached, reply):
    found = presets.match(text)
    assert found is not None, text
    assert (found.intent, found.slots) == (intent, {**slots, "name": "all"}), text
    assert found.response == reply
    assert [d.id for d in resolve(presets.home, found.slots)] == reached


@pytest.mark.parametrize(
    ("text", "area"),
    [
        ("거실 불 다 꺼", "거실"),
        ("안방에 있는 불 전부 꺼 줘", "안방"),
        ("모든 주방 조명 꺼", "주방"),
    ],
)
def test_a_named_area_keeps_the_quantifier_in_it(presets, text, area):
    found = presets.match(text)
    assert found is not None and found.intent == "HassTurnOff"
    assert found.slots["area"] == area
    assert len(resolve(presets.home, found.slots)) == 1


def test_without_a_quantifier_the_speakers_room_is_meant(presets):
    # the speaker stands in 거실: "에어컨 꺼" is that room's, "모든 에어컨 꺼" every one
    one = presets.match("에어컨 꺼 줘")
    assert one.slots["area"] == "거실"
    assert [d.id for d in resolve(presets.home, one.slots)] == ["climate.living_room"]
    assert presets.match("커튼 닫아 줘").slots["area"] == "거실"
    # a kind with no room said and no quantifier: this room's, else the one in the home
    vacuum = presets.match("청소기 꺼")
    assert vacuum.slots == {"domain": "vacuum"} and vacuum.response == "청소기 청소를 멈췄어요"
    assert [d.id for d in resolve(presets.home, vacuum.slots)] == ["vacuum.robot"]


@pytest.mark.parametrize(
    "text",
    [
        "모든 게 귀찮아",
        "다 했어?",
        "다 꺼졌어?",
        "불 다 꺼졌어?",
        "모든 불이 꺼져 있네",
        "불 다 껐어",
        "어제 불 다 껐어?",
        "모든 불 끄지 마",
        "불 다 끄면 어두워",
        "엄마가 불 다 끄라고 했어",
        "집에 있는 거 전부 정리해",
        "전부 다 내 잘못이야",
        "모두 다 잘 자",
        "다 같이 불러 보자",
        "모든 커튼이 예쁘다",
        "에어컨 다 고장 났어",
    ],
)
def test_a_quantifier_alone_commands_nothing(presets, text):
    assert presets.match(text) is None, text


def test_sori_intent_prints_every_light(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sori", "intent", "--config", str(EXAMPLE_CONFIG),
         "모든 불을 파란색으로 바꿔 줘"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().split("\t")[1:] == [
        "HassLightSet domain=light name=all color=blue",
        "모든 조명 색을 바꿨어요",
    ]
