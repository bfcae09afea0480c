"""Sori in Home Assistant through MQTT discovery: the speaker shows up as one device with
a mute switch, a volume number, a "listening" binary sensor, "last command" and "last
reply" sensors, and availability.

Home Assistant's device-based discovery: one retained config,
`<prefix>/device/<node_id>/config` (e.g. `homeassistant/device/sori/config`), holds the
device (`dev`), the origin (`o`) and every entity as a component (`cmps`). State and
command topics live under `sori/<node_id>/`: `availability` (`online`, and `offline` as the
last will when the connection dies without a goodbye), `mute` + `mute/set` (ON/OFF),
`volume` + `volume/set` (0-100), `listening` (ON/OFF), `last_command` (what was heard
last) and `last_reply` (what Sori said last).

Earlier versions announced three entities on per-entity topics
(`homeassistant/switch/sori/mute/config`, ...). On connect those are migrated as HA's
documentation describes: `{"migrate_discovery": true}` on each old topic, then the
device config, then an empty retained payload that clears the old topic; the entities
keep their unique ids (and their history).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from sori import __version__
from sori.acting.mqtt_connection import client_id_for, import_paho, leave, parse_url, prepare

log = logging.getLogger(__name__)

ONLINE, OFFLINE = "online", "offline"
STATES = ("mute", "volume", "listening", "last_command", "last_reply")
"""What `MqttPresence.state` publishes."""
MAX_STATE_CHARS = 255
"""Longest state Home Assistant keeps for a sensor, in characters."""
OLD_ENTITIES = (("switch", "mute"), ("number", "volume"), ("sensor", "last_command"))
"""(component, object id) of the per-entity configs earlier versions retained."""


class MqttPresence:
    """Publishes Sori's discovery configs and states; hands HA's commands to `on_command`
    (called on paho's thread with ("mute", "ON"|"OFF") or ("volume", "42"))."""

    def __init__(
        self,
        url: str,
        node_id: str = "sori",
        prefix: str = "homeassistant",
        name: str = "Sori",
        username: str = "",
        password: str = "",
        on_command: Callable[[str, str], None] | None = None,
        per_entity: bool = False,
        client_id: str = "",
    ) -> None:
        mqtt = import_paho()
        self.per_entity = per_entity
        """Announce each entity on its own topic (`entity_configs`), as Home Assistant
        before device-based discovery understands it (2024.3 ignores the device topic);
        nothing is migrated or cleared but the device topic."""
        self.host, self.port, tls = parse_url(url)
        self.url, self.node_id, self.prefix, self.name = url, node_id, prefix, name
        self.on_command = on_command
        self.base = f"sori/{node_id}"
        self.availability = f"{self.base}/availability"
        self.connected = threading.Event()
        self._client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=client_id_for(client_id, "presence")
        )
        prepare(self._client, tls, username, password)
        # The broker says "offline" for us when the connection dies without a goodbye.
        self._client.will_set(self.availability, OFFLINE, qos=1, retain=True)
        self._client.reconnect_delay_set(min_delay=0.25, max_delay=5)  # type: ignore[arg-type]
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = lambda *a: self.connected.clear()
        self._client.on_message = self._on_message
        self._started = False

    @property
    def config_topic(self) -> str:
        """The device's discovery topic."""
        return f"{self.prefix}/device/{self.node_id}/config"

    @property
    def old_topics(self) -> list[str]:
        """The per-entity discovery topics of earlier versions (cleared on connect)."""
        return [f"{self.prefix}/{c}/{self.node_id}/{o}/config" for c, o in OLD_ENTITIES]

    def config(self) -> dict[str, Any]:
        """The device-based discovery payload: device, origin, components."""
        base = self.base

        def component(platform: str, object_id: str, name: str, **fields: Any) -> dict:
            return {"p": platform, "unique_id": f"{self.node_id}_{object_id}", "name": name,
                    **fields}  # fmt: skip

        return {
            "dev": {
                "ids": [f"sori_{self.node_id}"],
                "name": self.name,
                "mf": "Sori",
                "mdl": "voice assistant",
                "sw": __version__,
            },
            "o": {"name": "sori", "sw": __version__},
            "availability_topic": self.availability,
            "cmps": {
                "mute": component(
                    "switch", "mute", "Mute", icon="mdi:volume-off",
                    command_topic=f"{base}/mute/set", state_topic=f"{base}/mute",
                    payload_on="ON", payload_off="OFF",
                ),
                "volume": component(
                    "number", "volume", "Volume", icon="mdi:volume-high",
                    command_topic=f"{base}/volume/set", state_topic=f"{base}/volume",
                    min=0, max=100, step=1, unit_of_measurement="%",
                ),
                "listening": component(
                    "binary_sensor", "listening", "Listening", icon="mdi:microphone",
                    state_topic=f"{base}/listening", payload_on="ON", payload_off="OFF",
                ),
                "last_command": component(
                    "sensor", "last_command", "Last command", icon="mdi:account-voice",
                    state_topic=f"{base}/last_command",
                ),
                "last_reply": component(
                    "sensor", "last_reply", "Last reply", icon="mdi:message-reply-text",
                    state_topic=f"{base}/last_reply",
                ),
            },
            "qos": 1,
        }  # fmt: skip

    def entity_configs(self) -> dict[str, dict[str, Any]]:
        """Per-entity discovery: `<prefix>/<platform>/<node_id>/<object_id>/config` → that
        entity's config, with the device, origin and availability of `config()`. Every
        Home Assistant with MQTT discovery understands these; the unique ids are those of
        the device config, so HA keeps the same entities either way."""
        config = self.config()
        shared = {
            "device": config["dev"],
            "origin": config["o"],
            "availability_topic": config["availability_topic"],
            "qos": config["qos"],
        }
        return {
            f"{self.prefix}/{c['p']}/{self.node_id}/{object_id}/config": {
                **{k: v for k, v in c.items() if k != "p"},
                **shared,
            }
            for object_id, c in config["cmps"].items()
        }

    def start(self) -> None:
        """Connect in the background (and again after a loss); idempotent."""
        if not self._started:
            self._started = True
            self._client.connect_async(self.host, self.port, keepalive=30)
            self._client.loop_start()

    def _on_connect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        if reason_code.is_failure:
            log.warning("MQTT discovery: %s refused the connection: %s", self.url, reason_code)
            return
        if self.per_entity:
            client.publish(self.config_topic, b"", qos=1, retain=True)  # no device config too
            for topic, entity in self.entity_configs().items():
                client.publish(topic, json.dumps(entity, ensure_ascii=False), qos=1, retain=True)
        else:
            for old in self.old_topics:  # HA keeps the old entities' ids: migrated, not removed
                client.publish(old, json.dumps({"migrate_discovery": True}), qos=1)
            config = json.dumps(self.config(), ensure_ascii=False)
            client.publish(self.config_topic, config, qos=1, retain=True)
            for old in self.old_topics:
                client.publish(old, b"", qos=1, retain=True)
        client.publish(self.availability, ONLINE, qos=1, retain=True)
        client.subscribe([(f"{self.base}/mute/set", 1), (f"{self.base}/volume/set", 1)])
        log.info("MQTT discovery: Sori published to %s under %s/", self.url, self.prefix)
        self.connected.set()

    def _on_message(self, client, userdata, message) -> None:  # noqa: ANN001
        what = message.topic.removeprefix(f"{self.base}/").removesuffix("/set")
        payload = message.payload.decode("utf-8", errors="replace").strip()
        if self.on_command is not None:
            try:
                self.on_command(what, payload)
            except Exception as exc:  # a bad command from HA must not stop the client
                log.warning("MQTT discovery: %s %r failed: %s", what, payload, exc)

    def state(self, what: str, value: str) -> None:
        """Publish a state (retained): "mute" and "listening" ON/OFF, "volume" 0-100,
        "last_command" and "last_reply" text (one of `STATES`)."""
        if what.startswith("last_") and len(value) > MAX_STATE_CHARS:  # HA refuses longer
            value = value[: MAX_STATE_CHARS - 1] + "…"
        self._client.publish(f"{self.base}/{what}", value, qos=1, retain=True)

    def close(self) -> None:
        """Say "offline" and leave (a clean goodbye: the last will is not sent)."""
        if self._started:
            self._started = False
            leave(self._client, self.availability, OFFLINE, self.connected)
