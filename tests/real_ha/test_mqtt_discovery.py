"""Sori in Home Assistant through MQTT discovery, on HA's MQTT integration and a real
mosquitto: `sori run` with `[mqtt] discovery = true` should appear in HA's state machine,
and HA's mute switch mutes Sori's speaker. HA 2024.3 predates device-based discovery, so
these announce Sori per entity ([mqtt] discovery_format = "entity")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ha_kit import wait_for
from sori_daemon import daemon_config, running

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "actions"))
import fake_amixer  # noqa: E402

HOME = """[home]
area = "living_room"
areas = [{ id = "living_room", name = "거실" }]
"""


def test_sori_appears_in_ha_and_its_mute_switch_mutes_sori(real_ha, ha_mqtt, tmp_path, monkeypatch):
    amixer, mixer = fake_amixer.install(tmp_path, monkeypatch, "default", "Master")
    extra = (
        f'[mqtt]\nurl = "{ha_mqtt}"\ndiscovery = true\ndiscovery_format = "entity"\n\n'
        f'[speaker]\namixer = "{amixer}"\n'
    )  # HA 2024.3 predates device-based discovery
    config = daemon_config(tmp_path, real_ha.url, HOME, "thinking = false\n\n" + extra)
    with running(config, real_ha.token):
        states = wait_for(  # made "unavailable", then online as HA reads the retained state
            lambda: {
                e: s for e, s in real_ha.states().items()
                if e.endswith("sori_mute") and s["state"] != "unavailable"
            },
            timeout_s=20,
        )  # fmt: skip
        (mute,) = states
        assert states[mute]["state"] == "off"
        real_ha.call("switch", "turn_on", entity_id=mute)
        wait_for(lambda: json.loads(mixer.read_text())["on"] is False)
        wait_for(lambda: real_ha.state(mute) == "on")


def test_per_entity_discovery_shows_sori_in_ha_and_carries_its_mute_switch(real_ha, ha_mqtt):
    """`MqttPresence(per_entity=True)`, the fix for HA before device-based discovery: each
    entity on its own topic. HA 2024.3 makes them, with Sori's states; HA's mute switch
    reaches Sori as ("mute", "ON"); a clean goodbye makes them unavailable."""
    from sori.acting.actions.discovery import MqttPresence

    commands: list[tuple[str, str]] = []
    presence = MqttPresence(
        ha_mqtt,
        node_id="kitchen_speaker",
        name="Sori 주방",
        on_command=lambda what, payload: commands.append((what, payload)),
        per_entity=True,
    )
    presence.start()
    try:
        assert presence.connected.wait(10)
        presence.state("mute", "OFF")
        presence.state("volume", "40")
        presence.state("last_reply", "거실 조명을 켰어요")
        wanted = {"mute": "switch", "volume": "number", "listening": "binary_sensor",
                  "last_command": "sensor", "last_reply": "sensor"}  # fmt: skip

        def made() -> dict[str, str] | None:
            found = {
                e["unique_id"].removeprefix("kitchen_speaker_"): e["entity_id"]
                for e in real_ha.ws({"type": "config/entity_registry/list"})
                if e["platform"] == "mqtt" and e["unique_id"].startswith("kitchen_speaker_")
            }
            return found if len(found) == len(wanted) else None

        entities = wait_for(made)
        assert {k: v.split(".")[0] for k, v in entities.items()} == wanted
        mute = entities["mute"]
        wait_for(lambda: real_ha.state(mute) == "off")
        assert float(real_ha.state(entities["volume"])) == 40
        assert real_ha.state(entities["last_reply"]) == "거실 조명을 켰어요"
        real_ha.call("switch", "turn_on", entity_id=mute)
        wait_for(lambda: ("mute", "ON") in commands)
        presence.state("mute", "ON")  # what Sori publishes once its speaker is muted
        wait_for(lambda: real_ha.state(mute) == "on")
    finally:
        presence.close()
    wait_for(lambda: real_ha.state(mute) == "unavailable")
    errors = [x for x in real_ha.log_text().splitlines() if "ERROR" in x and "kitchen" in x]
    assert errors == []
