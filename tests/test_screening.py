"""What is answered without acting or thinking: a device the home lacks, command-word
salad; and what is not (questions, real commands, other talk)."""

from __future__ import annotations

from sori.core.home import Area, Device, Home
from sori.understanding.screening import screen

HOME = Home(
    areas=(Area("living_room", "거실"),),
    devices=(
        Device("light.living_room", "거실 조명", "light", "living_room"),
        Device("climate.living_room", "거실 에어컨", "climate", "living_room"),
        Device("fan.air_purifier", "공기청정기", "fan", "living_room"),
    ),
    speaker_area="living_room",
)


def test_a_device_the_home_lacks_is_named():
    found = screen(HOME, "세탁기 돌려 줘")
    assert found is not None and found.kind == "missing_device"
    assert found.reply == "세탁기는 연결돼 있지 않아요."
    assert screen(HOME, "로봇청소기 좀 켜 줄래").reply == "로봇청소기는 연결돼 있지 않아요."
    assert screen(HOME, "TV 꺼 줘").reply == "TV는 연결돼 있지 않아요."


def test_devices_of_the_home_and_talk_about_devices_are_not_screened():
    for text in ("에어컨 켜 줘", "공기청정기 꺼 줘", "거실 불 꺼 줘", "세탁기 고르는 법 알려 줄래",
                 "하늘은 왜 파래?", "오늘 날씨 어때?", "뭐 해?", "음 그러니까"):  # fmt: skip
        assert screen(HOME, text) is None, text


def test_command_word_salad_is_misheard():
    for text in ("줘 꺼 주세요 꺼 줘", "켜 켜 줘", "음 좀 꺼"):
        found = screen(HOME, text)
        assert found is not None and found.kind == "misheard", text
        assert found.reply.startswith("잘 못 들었어요")


def test_english_replies():
    assert screen(HOME, "세탁기 돌려 줘", "en").reply == "There is no 세탁기 connected here."
