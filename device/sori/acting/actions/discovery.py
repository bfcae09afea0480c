"""Sori in Home Assistant through MQTT discovery: the speaker shows up as a device with a
mute switch, a volume number, a "last command" sensor and availability.

Config topics (retained): `<prefix>/<component>/<node_id>/<object_id>/config`, e.g.
`homeassistant/switch/sori/mute/config`. State and command topics live under
`sori/<node_id>/`: `availability` (`online`, and `offline` as the last will when the
connection dies without a goodbye), `mute` + `mute/set` (ON/OFF), `volume` +
`volume/set` (0-100), `last_command` (what was heard last).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from sori import __version__
from sori.acting.mqtt_connection import authenticate, import_paho, parse_url

log = logging.getLogger(__name__)

ONLINE, OFFLINE = "online", "offline"


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
    ) -> None:
        mqtt = import_paho()
        self.host, self.port, tls = parse_url(url)
        self.url, self.node_id, self.prefix, self.name = url, node_id, prefix, name
        self.on_command = on_command
        self.base = f"sori/{node_id}"
        self.availability = f"{self.base}/availability"
        self.connected = threading.Event()
        self._client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=f"{node_id}-presence"
        )
        authenticate(self._client, tls, username, password)
        # The broker says "offline" for us when the connection dies without a goodbye.
        self._client.will_set(self.availability, OFFLINE, qos=1, retain=True)
        self._client.reconnect_delay_set(min_delay=0.25, max_delay=5)  # type: ignore[arg-type]
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = lambda *a: self.connected.clear()
        self._client.on_message = self._on_message
        self._started = False

    def configs(self) -> dict[str, dict[str, Any]]:
        """Discovery topic → config payload, one per entity."""
        device = {
            "identifiers": [f"sori_{self.node_id}"],
            "name": self.name,
            "manufacturer": "Sori",
            "model": "voice assistant",
            "sw_version": __version__,
        }
        common = {"availability_topic": self.availability, "device": device}

        def entity(component: str, object_id: str, **fields: Any) -> tuple[str, dict]:
            topic = f"{self.prefix}/{component}/{self.node_id}/{object_id}/config"
            return topic, {"unique_id": f"{self.node_id}_{object_id}", **fields, **common}

        return dict(
            [
                entity(
                    "switch", "mute", name="Mute", icon="mdi:volume-off",
                    command_topic=f"{self.base}/mute/set", state_topic=f"{self.base}/mute",
                    payload_on="ON", payload_off="OFF",
                ),
                entity(
                    "number", "volume", name="Volume", icon="mdi:volume-high",
                    command_topic=f"{self.base}/volume/set", state_topic=f"{self.base}/volume",
                    min=0, max=100, step=1, unit_of_measurement="%",
                ),
                entity(
                    "sensor", "last_command", name="Last command",
                    icon="mdi:account-voice", state_topic=f"{self.base}/last_command",
                ),
            ]
        )  # fmt: skip

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
        for topic, config in self.configs().items():
            client.publish(topic, json.dumps(config, ensure_ascii=False), qos=1, retain=True)
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
        """Publish a state (retained): "mute" ON/OFF, "volume" 0-100, "last_command" text."""
        self._client.publish(f"{self.base}/{what}", value, qos=1, retain=True)

    def close(self) -> None:
        """Say "offline" and leave (a clean goodbye: the last will is not sent)."""
        if self._started:
            self._started = False
            info = self._client.publish(self.availability, OFFLINE, qos=1, retain=True)
            if self.connected.is_set():
                info.wait_for_publish(2)
            self._client.disconnect()
            self._client.loop_stop()
