"""'불 켜줘' never turns on every light: with no speaker room (no `[home] area`) the speaker
asks which room and nothing is published; with one, only that room's lights; only
다/모든/전부 reaches all. Measured on a real mosquitto: what the broker carries."""

from __future__ import annotations

import asyncio
import queue

import pytest

from sori.assemble.acting import build_handlers, build_registry, build_timers
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.core.config import parse_config
from sori.core.events import IntentCommitted

HOME = """
[[home.areas]]
id = "living_room"
name = "거실"
[[home.areas]]
id = "bedroom"
name = "안방"
[[home.areas]]
id = "kitchen"
name = "주방"
[[home.devices]]
id = "light.living_room"
name = "거실 조명"
area = "living_room"
[[home.devices]]
id = "light.bedroom"
name = "안방 조명"
area = "bedroom"
[[home.devices]]
id = "light.kitchen"
name = "주방 조명"
area = "kitchen"
"""


def said_and_sent(broker: str, sub, text: str, area: str, tmp_path) -> tuple[str, set[str]]:
    """What the speaker says for `text` and the topics the broker carried for it."""
    import tomllib

    data = tomllib.loads(HOME)
    data["home"]["area"] = area
    data["actions"] = {"default_handler": "mqtt"}
    data["mqtt"] = {"url": broker, "client_id": f"unscoped-{abs(hash(text + area))}"}
    data["alarms"] = {"state_file": str(tmp_path / "timers.json")}
    config = parse_config(data)
    home = home_from_config(config.home)
    presets = presets_from_config(config.intents, home)
    found = presets.match(text)
    assert found is not None, text

    async def act():
        handlers = build_handlers(config)
        registry = build_registry(config, home, build_timers(config), None, handlers)
        try:
            committed = IntentCommitted(0, 1, text, found.intent, found.slots, 1.0, found.response)
            return await registry.act(committed)
        finally:
            for handler in handlers.values():
                await handler.close()

    finished = asyncio.run(act())
    assert all(f.ok for f in finished), finished
    topics = set()
    while True:  # QoS 2 is acknowledged before act() returns: all has arrived
        try:
            topic, _ = sub.next(timeout_s=0.5)
        except queue.Empty:
            break
        topics.add(topic)
    return found.response, topics


def test_no_speaker_room_asks_which_and_publishes_nothing(mosquitto, subscriber, tmp_path):
    said, sent = said_and_sent(mosquitto, subscriber, "불 켜줘", "", tmp_path)
    assert sent == set()
    assert "어느 방" in said and "거실" in said and "안방" in said


@pytest.mark.parametrize("text", ["모든 불 켜줘", "불 다 켜줘", "전부 불 켜줘"])
def test_all_is_said_aloud_then_every_light(mosquitto, subscriber, tmp_path, text):
    _, sent = said_and_sent(mosquitto, subscriber, text, "", tmp_path)
    assert sent == {
        "sori/light/living_room/set",
        "sori/light/bedroom/set",
        "sori/light/kitchen/set",
    }


def test_the_default_area_is_the_only_room_lit(mosquitto, subscriber, tmp_path):
    said, sent = said_and_sent(mosquitto, subscriber, "불 켜줘", "bedroom", tmp_path)
    assert sent == {"sori/light/bedroom/set"}
    assert said == "안방 조명을 켰어요"


def test_a_named_room_wins_over_no_default(mosquitto, subscriber, tmp_path):
    _, sent = said_and_sent(mosquitto, subscriber, "주방 불 꺼줘", "", tmp_path)
    assert sent == {"sori/light/kitchen/set"}
