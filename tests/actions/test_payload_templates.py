"""Per-device MQTT payloads, so Zigbee2MQTT and Tasmota devices work without glue: each
command goes through the registry built from the config to a real mosquitto, and the test
reads back what the broker carried."""

from __future__ import annotations

import asyncio
import json

from sori.acting.actions.base import Command
from sori.acting.actions.mqtt import fill, payload_for
from sori.assemble.acting import build_handlers, build_registry, build_timers
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.core.config import parse_config
from sori.core.events import IntentCommitted
from sori.core.home import Device

LAMP = Device("light.desk", "책상 조명", "light")


def test_templates_fill_values_keep_numbers_and_leave_out_what_is_missing():
    template = {"state": "{state}", "brightness": "{brightness_255}", "note": "by {intent}"}
    on = Command("HassTurnOn", {}, LAMP, payload=template)
    assert json.loads(payload_for(on)) == {"state": "ON", "note": "by HassTurnOn"}
    dim = Command("HassLightSet", {"brightness": 50}, LAMP, payload=template)
    assert json.loads(payload_for(dim)) == {
        "state": "ON", "brightness": 128, "note": "by HassLightSet"
    }  # fmt: skip
    assert fill({"color": {"name": "{color}"}}, {}) == {}  # an emptied table goes too
    assert payload_for(Command("HassTurnOff", {}, LAMP, payload_off="0")) == "0"
    assert payload_for(Command("HassTurnOff", {}, LAMP)) == "OFF"  # the default stays


def test_zigbee2mqtt_and_tasmota_devices_on_a_real_broker(mosquitto, subscriber, tmp_path):
    config = parse_config(
        {
            "home": {
                "area": "study",
                "areas": [{"id": "study", "name": "서재"}],
                "devices": [
                    {"id": "light.study", "name": "서재 조명", "area": "study",
                     "topic": "zigbee2mqtt/서재 조명/set",
                     "payload": {"state": "{state}", "brightness": "{brightness_255}"}},
                    {"id": "switch.heater", "name": "히터 플러그", "area": "study",
                     "topic": "cmnd/tasmota_heater/POWER",
                     "payload_on": "ON", "payload_off": "OFF"},
                ],
            },
            "actions": {"default_handler": "mqtt"},
            "mqtt": {"url": mosquitto, "client_id": "templates"},
            "alarms": {"state_file": str(tmp_path / "timers.json")},
        }
    )  # fmt: skip
    home = home_from_config(config.home)
    presets = presets_from_config(config.intents, home)

    async def say(texts: list[str]) -> None:
        handlers = build_handlers(config)
        registry = build_registry(config, home, build_timers(config), None, handlers)
        try:
            for text in texts:
                found = presets.match(text)
                assert found is not None, text
                done = await registry.act(IntentCommitted(0, 1, text, found.intent, found.slots))
                assert done and all(f.ok for f in done), done
        finally:
            for handler in handlers.values():
                await handler.close()

    asyncio.run(say(["서재 조명 켜줘", "서재 조명 밝기 50%로 해줘", "히터 플러그 꺼줘"]))
    got = [subscriber.next() for _ in range(3)]
    assert got[0] == ("zigbee2mqtt/서재 조명/set", '{"state": "ON"}')
    assert got[1][0] == "zigbee2mqtt/서재 조명/set"
    assert json.loads(got[1][1]) == {"state": "ON", "brightness": 128}
    assert got[2] == ("cmnd/tasmota_heater/POWER", "OFF")
