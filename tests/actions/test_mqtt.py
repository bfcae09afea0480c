from __future__ import annotations

import asyncio
from socket import IPPROTO_TCP, TCP_NODELAY

import pytest

from broker import free_port
from sori.acting.actions.base import Command, NotConfirmed
from sori.acting.actions.mqtt import MqttHandler, payload_for, topic_for
from sori.acting.mqtt_connection import parse_url
from sori.core.errors import BackendError, ConfigError
from sori.core.home import Device

LAMP = Device("light.living_room", "거실 조명", "light", "living_room")
CURTAIN = Device("cover.curtain", "커튼", "cover", "living_room", device_class="curtain")


def test_on_off_payloads_follow_home_assistant_conventions():
    assert payload_for(Command("HassTurnOn", {"name": "거실 조명"}, LAMP)) == "ON"
    assert payload_for(Command("HassTurnOff", {}, LAMP)) == "OFF"
    assert payload_for(Command("HassTurnOn", {}, CURTAIN)) == "OPEN"
    assert payload_for(Command("HassTurnOff", {}, CURTAIN)) == "CLOSE"


def test_other_intents_send_json_with_their_settings_only():
    cmd = Command("HassLightSet", {"name": "거실 조명", "area": "거실", "brightness": 40}, LAMP)
    assert payload_for(cmd) == (
        '{"intent": "HassLightSet", "entity_id": "light.living_room", "brightness": 40}'
    )


def test_topic_template_and_device_override():
    assert topic_for(Command("HassTurnOn", {}, LAMP)) == "sori/light/living_room/set"
    assert topic_for(Command("HassTurnOn", {}, LAMP), "home/{entity_id}") == (
        "home/light.living_room"
    )
    assert topic_for(Command("HassTurnOn", {}, LAMP, topic="zigbee2mqtt/lamp/set")) == (
        "zigbee2mqtt/lamp/set"
    )


def test_urls():
    assert parse_url("mqtt://10.0.0.2") == ("10.0.0.2", 1883, False)
    assert parse_url("mqtts://broker:9999") == ("broker", 9999, True)
    with pytest.raises(ConfigError, match=r"mqtt\.url"):
        parse_url("http://broker")


def test_commands_reach_a_real_broker(mosquitto, subscriber):
    async def main():
        handler = MqttHandler(mosquitto, client_id="test-pub")
        try:
            on = await handler.handle(Command("HassTurnOn", {}, LAMP))
            await handler.handle(Command("HassSetPosition", {"position": 30}, CURTAIN))
            # a command leaves at once, not after the broker acknowledged the last one
            nodelay = handler._client.socket().getsockopt(IPPROTO_TCP, TCP_NODELAY)
        finally:
            await handler.close()
        return on, nodelay

    result, nodelay = asyncio.run(main())
    assert nodelay
    assert result.detail == "sori/light/living_room/set ON"
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    topic, payload = subscriber.next()
    assert topic == "sori/cover/curtain/set"
    assert '"position": 30' in payload


def test_broker_down_is_a_backend_error_that_names_the_url():
    url = f"mqtt://127.0.0.1:{free_port()}"

    async def main():
        handler = MqttHandler(url, timeout_s=0.5)
        try:
            await handler.handle(Command("HassTurnOn", {}, LAMP))
        finally:
            await handler.close()

    with pytest.raises(BackendError, match=f"{url} is not reachable"):
        asyncio.run(main())


def test_mqtt_3_1_1_still_confirms_commands(mosquitto, subscriber):
    async def main():
        handler = MqttHandler(mosquitto, client_id="test-311", protocol="3.1.1")
        try:
            return await handler.handle(Command("HassTurnOff", {}, LAMP))
        finally:
            await handler.close()

    assert asyncio.run(main()).detail == "sori/light/living_room/set OFF"
    assert subscriber.next() == ("sori/light/living_room/set", "OFF")


def test_protocol_and_qos_are_checked():
    with pytest.raises(ConfigError, match=r"mqtt\.protocol"):
        MqttHandler("mqtt://127.0.0.1", protocol="4")
    with pytest.raises(ConfigError, match=r"mqtt\.qos"):
        MqttHandler("mqtt://127.0.0.1", qos=3)


def test_qos_0_is_reported_as_sent_not_confirmed(mosquitto, subscriber):
    async def main():
        handler = MqttHandler(mosquitto, client_id="test-qos0", qos=0)
        try:
            await handler.handle(Command("HassTurnOn", {}, LAMP))
        finally:
            await handler.close()

    with pytest.raises(NotConfirmed, match="QoS 0"):
        asyncio.run(main())
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
