"""One sentence never fans out to many commands (issue 25, item 9): through the daemon
on a real mosquitto broker, counting what is published.

Every test ends with one more command (`SENTINEL`): the daemon has one publisher and the
broker one subscriber, so whatever the sentence published arrives before it.
"""

from __future__ import annotations

import asyncio
import tomllib

import pytest

from cpu_time import cpu_seconds
from daemon_kit import ENGLISH_HOME, HOME_TOML, build, write_config
from sori.assemble.understanding import Swappable, home_from_config, presets_from_config
from sori.core.config import parse_config
from sori.understanding.multi_command import MAX_PARTS, plan
from test_multi_command import BEDROOM_LIGHT

SENTINEL = "에어컨 꺼줘"
SENTINEL_MESSAGE = ("sori/climate/bedroom/set", "OFF")

# Four more lights with no room, so a sentence can name six different devices.
MORE_LIGHTS = "".join(
    f'\n[[home.devices]]\nid = "light.{key}"\nname = "{name} 불"\nhandler = "mqtt"\n'
    for key, name in (("kitchen", "주방"), ("porch", "현관"), ("study", "서재"), ("bath", "욕실"))
)


@pytest.fixture(scope="module")
def presets_of_test_home():
    """The daemon tests' home (daemon_kit.HOME_TOML, 안방 조명 added), matched without a daemon."""
    config = parse_config(tomllib.loads(HOME_TOML + BEDROOM_LIGHT))
    return presets_from_config(config.intents, home_from_config(config.home))


def published(tmp_path, mosquitto, subscriber, text: str, extra: str = "") -> tuple[dict, list]:
    """(the turn of `text`, the messages it published)."""
    daemon = build(write_config(tmp_path, mosquitto, extra), tmp_path / "reply.wav")

    async def turns():
        try:
            turn = await asyncio.wait_for(daemon.say(text), 30)
            await asyncio.wait_for(daemon.say(SENTINEL), 30)
            return turn
        finally:
            await daemon.close()

    turn = asyncio.run(turns())
    messages = []
    while (message := subscriber.next()) != SENTINEL_MESSAGE:
        messages.append(message)
    return turn, messages


def test_one_command_said_two_hundred_times_is_sent_once(tmp_path, mosquitto, subscriber):
    turn, messages = published(
        tmp_path, mosquitto, subscriber, "거실 불 켜고 " * 199 + "거실 불 켜줘"
    )
    assert messages == [("sori/light/living_room/set", "ON")]
    assert turn["response"] == "거실 조명을 켰어요."


def test_alternating_on_and_off_is_refused_whole(tmp_path, mosquitto, subscriber):
    text = "거실 불 켜고 거실 불 끄고 " * 25 + "거실 불 켜줘"
    turn, messages = published(tmp_path, mosquitto, subscriber, text)
    assert messages == []
    assert turn["actions"] == []
    assert turn["response"] == (
        "거실 조명에 서로 반대되는 명령이 함께 있어서 아무것도 하지 않았어요. 하나만 말씀해 주세요."
    )


def test_on_then_off_of_one_device_is_refused(tmp_path, mosquitto, subscriber):
    turn, messages = published(tmp_path, mosquitto, subscriber, "거실 불 켜고 거실 조명 꺼줘")
    assert messages == []
    assert "반대되는 명령" in turn["response"]


def test_off_then_on_in_english_is_refused(tmp_path, mosquitto, subscriber):
    path = tmp_path / "sori.toml"
    path.write_text(ENGLISH_HOME + f'\n[mqtt]\nurl = "{mosquitto}"\n', encoding="utf-8")
    daemon = build(path, tmp_path / "reply.wav")
    text = "turn off the living room lights and then turn on the living room lights"

    async def turns():
        try:
            turn = await asyncio.wait_for(daemon.say(text), 30)
            await asyncio.wait_for(daemon.say("lock the front door"), 30)
            return turn
        finally:
            await daemon.close()

    turn = asyncio.run(turns())
    assert subscriber.next() == ("sori/lock/front_door/set", "LOCK")  # nothing before it
    assert turn["response"] == (
        "You asked the living room lights for opposite things, so I did nothing. "
        "Please say just one."
    )


def test_all_off_then_one_on_narrows_and_is_carried_out(tmp_path, mosquitto, subscriber):
    _, messages = published(tmp_path, mosquitto, subscriber, "불 다 끄고 거실 불 켜줘")
    assert messages == [("sori/light/living_room/set", "OFF"), ("sori/light/living_room/set", "ON")]


def test_a_target_joined_three_hundred_times_is_sent_once(tmp_path, mosquitto, subscriber):
    text = "거실이랑 " * 300 + "안방 불 꺼줘"
    turn, messages = published(tmp_path, mosquitto, subscriber, text, BEDROOM_LIGHT)
    assert messages == [("sori/light/living_room/set", "OFF"), ("sori/light/bedroom/set", "OFF")]
    assert turn["response"] == "거실 조명을 껐어요. 안방 조명을 껐어요."


def test_more_different_commands_than_the_cap_are_refused_whole(tmp_path, mosquitto, subscriber):
    text = "거실 불 켜고 에어컨 켜고 주방 불 켜고 현관 불 켜고 서재 불 켜고 욕실 불 켜줘"
    turn, messages = published(tmp_path, mosquitto, subscriber, text, MORE_LIGHTS)
    assert messages == []
    assert turn["response"] == (
        f"한 번에 {MAX_PARTS}가지까지만 할 수 있어서 아무것도 하지 않았어요. 나눠서 말씀해 주세요."
    )


def test_as_many_commands_as_the_cap_are_all_carried_out(tmp_path, mosquitto, subscriber):
    text = "거실 불 켜고 에어컨 켜고 주방 불 켜고 현관 불 켜고 서재 불 켜줘"
    _, messages = published(tmp_path, mosquitto, subscriber, text, MORE_LIGHTS)
    assert [topic for topic, _ in messages] == [
        "sori/light/living_room/set",
        "sori/climate/bedroom/set",
        "sori/light/kitchen/set",
        "sori/light/porch/set",
        "sori/light/study/set",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "거실 불 켜고 " * 1430,
        "거실이랑 " * 2000 + "안방 불 꺼줘",
        "가" * 10_000,
        "거실 " * 3333 + "불 켜줘",
        "켜고 " * 3333,
    ],
)
def test_a_sentence_of_ten_thousand_characters_is_answered_quickly(presets_of_test_home, text):
    understanding = Swappable(presets_of_test_home)

    def understand():
        understanding.match(text)
        return plan(understanding, text)

    seconds, several = cpu_seconds(understand)
    assert several is None or len(several.parts) <= MAX_PARTS
    assert seconds < 1.0  # about 0.02 s
