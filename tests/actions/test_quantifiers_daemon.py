"""Quantifiers and relative changes through the daemon, on a real mosquitto (issue 27):
what the broker carries for "모든 불 꺼 줘" (every light of the home, not only the
speaker's room), for a brightness step (the level read from the light's retained state
message, plus the step; the default level when there is none), and for a TV's volume step.
"""

from __future__ import annotations

import asyncio
import json
import queue

import paho.mqtt.client as mqtt
import pytest

from daemon_kit import build, write_config

MORE_DEVICES = """
[[home.devices]]
id = "light.bedroom"
name = "안방 조명"
aliases = ["안방 불"]
area = "bedroom"
handler = "mqtt"

[[home.devices]]
id = "light.kitchen"
name = "주방 조명"
aliases = ["주방 불"]
area = "kitchen"
handler = "mqtt"

[[home.devices]]
id = "media_player.tv"
name = "거실 티비"
area = "living_room"
handler = "mqtt"
"""
# daemon_kit's home lists its areas inline; the kitchen joins them
AREAS = '{ id = "living_room", name = "거실" }, { id = "bedroom", name = "안방" }'


@pytest.fixture
def retained(mosquitto):
    """Publish a retained state message (before the daemon starts); cleared afterwards."""
    host, port = mosquitto.removeprefix("mqtt://").split(":")
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect(host, int(port))
    client.loop_start()
    topics = []

    def publish(topic: str, value: str) -> None:
        client.publish(topic, value, qos=1, retain=True).wait_for_publish(5)
        topics.append(topic)

    yield publish
    for topic in topics:
        client.publish(topic, "", qos=1, retain=True).wait_for_publish(5)
    client.disconnect()
    client.loop_stop()


def daemon_for(tmp_path, mosquitto):
    config = write_config(tmp_path, mosquitto, MORE_DEVICES)
    text = config.read_text(encoding="utf-8")
    assert AREAS in text
    kitchen = AREAS + ', { id = "kitchen", name = "주방" }'
    config.write_text(text.replace(AREAS, kitchen), encoding="utf-8")
    return build(config, tmp_path / "reply.wav")


def said(daemon, *texts: str) -> list[dict]:
    async def turns():
        try:
            return [await asyncio.wait_for(daemon.say(t), 30) for t in texts]
        finally:
            await daemon.close()

    return asyncio.run(turns())


def carried(subscriber, topic_prefix: str = "sori/") -> list[tuple[str, str]]:
    """Every command message the broker carried (state topics left out)."""
    out = []
    while True:
        try:
            topic, payload = subscriber.next(timeout_s=0.5)
        except queue.Empty:
            return out
        if topic.startswith(topic_prefix) and topic.endswith("/set"):
            out.append((topic, payload))


def test_all_lights_off_reaches_every_light_of_the_home(tmp_path, mosquitto, subscriber):
    daemon = daemon_for(tmp_path, mosquitto)  # the speaker stands in 거실
    (turn,) = said(daemon, "모든 불 꺼 줘")
    assert turn["intent"] == "HassTurnOff" and turn["response"] == "모든 조명을 껐어요"
    assert sorted(carried(subscriber)) == [
        ("sori/light/bedroom/set", "OFF"),
        ("sori/light/kitchen/set", "OFF"),
        ("sori/light/living_room/set", "OFF"),
    ]


def test_a_brightness_step_publishes_the_level_it_worked_out(
    tmp_path, mosquitto, subscriber, retained
):
    retained("sori/light/bedroom/state", json.dumps({"state": "ON", "brightness": 40}))
    daemon = daemon_for(tmp_path, mosquitto)
    bright, dim = said(daemon, "안방 불 밝게 해 줘", "주방 불 조금만 어둡게 해 줘")
    sent = carried(subscriber)
    assert [topic for topic, _ in sent] == ["sori/light/bedroom/set", "sori/light/kitchen/set"]
    bedroom, kitchen = (json.loads(payload) for _, payload in sent)
    assert bedroom == {
        "intent": "HassLightSet", "entity_id": "light.bedroom", "brightness": 60,
        "brightness_step": 20,
    }  # fmt: skip
    assert bright["response"] == "안방 조명 밝기를 60%로 올렸어요"
    # no state message: the documented default level (50 %), half a step for 조금만
    assert (kitchen["brightness"], kitchen["brightness_step"]) == (40, -10)
    assert dim["response"] == "주방 조명 밝기를 40%로 내렸어요"


def test_a_tvs_volume_step_goes_to_the_tv(tmp_path, mosquitto, subscriber):
    daemon = daemon_for(tmp_path, mosquitto)
    (turn,) = said(daemon, "티비 소리 좀 줄여 줘")
    ((topic, payload),) = carried(subscriber)
    assert topic == "sori/media_player/tv/set"
    assert json.loads(payload) == {
        "intent": "HassSetVolumeRelative", "entity_id": "media_player.tv", "volume_step": "down",
    }  # fmt: skip
    assert turn["response"] == "티비 볼륨을 내렸어요"


def test_a_named_timer_is_set_on_the_speaker_and_publishes_nothing(tmp_path, mosquitto, subscriber):
    daemon = daemon_for(tmp_path, mosquitto)
    started, cancelled = said(daemon, "라면 타이머 삼 분", "됐어 취소")
    assert started["intent"] == "HassStartTimer"
    assert started["response"] == "라면 삼 분 타이머를 시작했어요."
    assert cancelled["intent"] == "HassNevermind"
    assert carried(subscriber) == []
