"""Several commands in one sentence, through the daemon on a real mosquitto broker."""

from __future__ import annotations

import asyncio

from daemon_kit import ENGLISH_HOME, build, write_config

CURTAIN = """
[[home.devices]]
id = "cover.living_room_curtain"
name = "거실 커튼"
area = "living_room"
device_class = "curtain"
handler = "mqtt"
"""

BEDROOM_LIGHT = """
[[home.devices]]
id = "light.bedroom"
name = "안방 조명"
area = "bedroom"
aliases = ["안방 불"]
handler = "mqtt"
"""


async def closing(daemon, coro):
    try:
        return await asyncio.wait_for(coro, 30)
    finally:
        await daemon.close()


def test_both_commands_are_acted_on_in_order_with_one_reply(tmp_path, mosquitto, subscriber):
    daemon = build(write_config(tmp_path, mosquitto, CURTAIN), tmp_path / "reply.wav")

    async def turns():
        first = await daemon.say("거실 불 켜고 에어컨 꺼 줘")
        return first, await daemon.say("불 다 끄고 커튼 닫아줘")

    first, second = asyncio.run(closing(daemon, turns()))
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    assert subscriber.next() == ("sori/climate/bedroom/set", "OFF")
    assert subscriber.next() == ("sori/light/living_room/set", "OFF")
    assert subscriber.next() == ("sori/cover/living_room_curtain/set", "CLOSE")
    assert first["intent"] == "HassTurnOn+HassTurnOff"
    assert [a["target"] for a in first["actions"]] == ["light.living_room", "climate.bedroom"]
    assert first["response"] == "거실 조명을 켰어요. 에어컨을 껐어요."
    assert second["response"] == "모든 조명을 껐어요. 거실 커튼을 닫았어요."
    assert [p["text"] for p in second["slots"]["parts"]] == ["불 다 끄고", "커튼 닫아줘"]
    assert not first["error"] and not second["error"]


def test_a_sentence_with_an_unmatched_part_acts_on_nothing_and_says_why(
    tmp_path, mosquitto, subscriber
):
    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav")

    async def turns():
        refused = await daemon.say("거실 불 켜고 우주선 발사해 줘")
        return refused, await daemon.say("에어컨 꺼줘")

    refused, after = asyncio.run(closing(daemon, turns()))
    assert refused["actions"] == []
    said = "'우주선 발사해 줘' 부분을 이해하지 못해서 아무것도 하지 않았어요."
    assert refused["response"] == said
    # one publisher, one broker: had the light been switched on, it would arrive first
    assert subscriber.next() == ("sori/climate/bedroom/set", "OFF")
    assert after["actions"][0]["ok"]
    assert subscriber.messages.empty()


def test_a_failed_part_is_named_and_the_other_still_done(tmp_path, mosquitto, subscriber):
    extra = '\n[[home.devices]]\nid = "fan.attic"\nname = "다락 선풍기"\nhandler = "nowhere"\n'
    config = write_config(tmp_path, mosquitto, extra)
    config.write_text(config.read_text().replace('handler = "nowhere"', 'handler = "shell"'))
    daemon = build(config, tmp_path / "reply.wav")
    turn = asyncio.run(closing(daemon, daemon.say("다락 선풍기 켜고 거실 불 켜줘")))
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    assert [a["ok"] for a in turn["actions"]] == [False, True]
    assert turn["response"] == "죄송해요, 다락 선풍기는 제어하지 못했어요. 거실 조명을 켰어요."


def test_english_commands_joined_by_and_are_acted_on_in_order(tmp_path, mosquitto, subscriber):
    path = tmp_path / "sori.toml"
    path.write_text(ENGLISH_HOME + f'\n[mqtt]\nurl = "{mosquitto}"\n', encoding="utf-8")
    daemon = build(path, tmp_path / "reply.wav")
    text = "turn off the living room lights and then turn on the bedroom thermostat"
    turn = asyncio.run(closing(daemon, daemon.say(text)))
    assert subscriber.next() == ("sori/light/living_room/set", "OFF")
    assert subscriber.next() == ("sori/climate/bedroom/set", "ON")
    said = "Turned off the living room lights. Turned on the bedroom thermostat."
    assert turn["response"] == said


def test_targets_joined_by_hago_or_irang_share_the_verb_in_order(tmp_path, mosquitto, subscriber):
    daemon = build(write_config(tmp_path, mosquitto, BEDROOM_LIGHT), tmp_path / "reply.wav")

    async def turns():
        first = await daemon.say("거실 불하고 안방 불 꺼줘")
        return first, await daemon.say("거실이랑 안방 불 켜줘")

    first, second = asyncio.run(closing(daemon, turns()))
    assert subscriber.next() == ("sori/light/living_room/set", "OFF")
    assert subscriber.next() == ("sori/light/bedroom/set", "OFF")
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    assert subscriber.next() == ("sori/light/bedroom/set", "ON")
    assert first["response"] == "거실 조명을 껐어요. 안방 조명을 껐어요."
    assert second["response"] == "거실 조명을 켰어요. 안방 조명을 켰어요."
    # matched whole, "거실이랑 안방 불 켜줘" would light 안방 alone
    assert [p["text"] for p in second["slots"]["parts"]] == ["거실이랑", "안방 불 켜줘"]
    assert [a["target"] for a in second["actions"]] == ["light.living_room", "light.bedroom"]


def test_a_joined_target_that_matches_nothing_stops_the_whole_sentence(
    tmp_path, mosquitto, subscriber
):
    daemon = build(write_config(tmp_path, mosquitto, BEDROOM_LIGHT), tmp_path / "reply.wav")

    async def turns():
        refused = await daemon.say("우주선이랑 안방 불 꺼줘")
        return refused, await daemon.say("에어컨 꺼줘")

    refused, _ = asyncio.run(closing(daemon, turns()))
    assert refused["actions"] == []
    assert refused["response"] == "'우주선이랑' 부분을 이해하지 못해서 아무것도 하지 않았어요."
    assert subscriber.next() == ("sori/climate/bedroom/set", "OFF")  # 안방 was never sent
