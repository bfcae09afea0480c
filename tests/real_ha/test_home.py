"""The home as Home Assistant knows it, read from HA itself: `sori home import` and
`[home] source = "home_assistant"` get HA's areas (with aliases), the entities exposed to
Assist (with their aliases, areas and devices), and nothing that is not exposed."""

from __future__ import annotations

import json
import subprocess
import tomllib

import paho.mqtt.client as mqtt
import pytest
from ha_kit import SORI, sori_env, wait_for

ZIGBEE_LIGHT = {  # what a Zigbee2MQTT bulb announces (MQTT discovery, per entity)
    "name": None,
    "unique_id": "0x00178801_light",
    "command_topic": "zigbee2mqtt/bedroom_bulb/set",
    "state_topic": "zigbee2mqtt/bedroom_bulb",
    "schema": "json",
    "device": {"identifiers": ["zigbee2mqtt_0x00178801"], "name": "Hue bulb",
               "manufacturer": "Signify", "model": "LCA001"},
}  # fmt: skip


@pytest.fixture(scope="module")
def bulb(real_ha, home, ha_mqtt) -> dict[str, str]:
    """A Zigbee bulb discovered over MQTT: its device renamed 안방 스탠드 and placed in the
    area 안방 (alias 큰방); the light exposed to Assist."""
    host, port = ha_mqtt.removeprefix("mqtt://").split(":")
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect(host, int(port))
    client.loop_start()
    topic = "homeassistant/light/0x00178801/light/config"
    client.publish(topic, json.dumps(ZIGBEE_LIGHT), qos=1, retain=True).wait_for_publish(5)
    client.loop_stop()
    client.disconnect()
    entities = wait_for(
        lambda: [
            e
            for e in real_ha.ws({"type": "config/entity_registry/list"})
            if e["unique_id"] == ZIGBEE_LIGHT["unique_id"]
        ]
    )
    (entity,) = entities
    area = real_ha.area("안방", ["큰방"])
    real_ha.ws(
        {
            "type": "config/device_registry/update",
            "device_id": entity["device_id"],
            "area_id": area,
            "name_by_user": "안방 스탠드",
        }
    )
    real_ha.expose([entity["entity_id"]], True)
    return {"entity_id": entity["entity_id"], "area": area}


def test_sori_home_import_reads_areas_devices_and_exposed_entities(real_ha, home, bulb, tmp_path):
    out = tmp_path / "home.toml"
    subprocess.run(
        [SORI, "home", "import", "--ha-url", real_ha.url, "-o", str(out)],
        env=sori_env(tmp_path, SORI_HA_TOKEN=real_ha.token),
        check=True,
        timeout=60,
    )
    tables = tomllib.loads(out.read_text(encoding="utf-8"))["home"]
    areas = {a["id"]: a for a in tables["areas"]}
    assert areas[home["area"]]["name"] == "거실"
    assert areas[home["area"]].get("aliases") == ["리빙룸"]
    assert areas[bulb["area"]]["name"] == "안방" and areas[bulb["area"]]["aliases"] == ["큰방"]
    devices = {d["id"]: d for d in tables["devices"]}
    assert devices["light.living_light"] == {
        "id": "light.living_light",
        "name": "거실 조명",
        "domain": "light",
        "area": home["area"],
        "aliases": ["거실 불"],
    }
    # in its area through its device, named as HA shows it (the device's name)
    assert devices[bulb["entity_id"]]["area"] == bulb["area"]
    assert devices[bulb["entity_id"]]["name"] == "안방 스탠드"
    # not exposed to Assist: never imported (nor the helpers behind the template light)
    assert home["hidden"] not in devices
    assert set(devices) == {"light.living_light", bulb["entity_id"]}


def test_source_home_assistant_understands_by_ha_names_and_aliases(real_ha, home, bulb, tmp_path):
    config = tmp_path / "sori.toml"
    config.write_text(
        f'[home]\nsource = "home_assistant"\narea = "{home["area"]}"\n\n'
        f'[home_assistant]\nurl = "{real_ha.url}"\n',
        encoding="utf-8",
    )
    said = [
        "거실 불 켜줘",
        "리빙룸 조명 꺼 줘",
        "안방 스탠드 켜줘",
        "비밀 릴레이 켜줘",
        "비밀 스위치 켜줘",
    ]
    lines = subprocess.run(
        [SORI, "intent", "--json", "--config", str(config), *said],
        env=sori_env(tmp_path, SORI_HA_TOKEN=real_ha.token),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    got = {r["text"]: r for r in map(json.loads, lines)}
    assert got["거실 불 켜줘"]["intent"] == "HassTurnOn"
    assert got["거실 불 켜줘"]["slots"]["name"] == "거실 조명"
    assert got["리빙룸 조명 꺼 줘"]["intent"] == "HassTurnOff"
    assert got["안방 스탠드 켜줘"]["intent"] == "HassTurnOn"
    assert got["안방 스탠드 켜줘"]["slots"]["name"] == "안방 스탠드"
    for text in ["비밀 릴레이 켜줘", "비밀 스위치 켜줘"]:  # the switch is not exposed
        assert got[text]["intent"] is None or "비밀" not in json.dumps(
            got[text]["slots"], ensure_ascii=False
        ), got[text]
