"""MQTT commands (paho-mqtt), in the spirit of Home Assistant's MQTT conventions.

Topic: `sori/<domain>/<object_id>/set` by default (a template; per-device override).
Payload: `ON`/`OFF` for HassTurnOn/HassTurnOff (`OPEN`/`CLOSE` for covers,
`LOCK`/`UNLOCK` for locks), JSON with the intent and its settings for anything else:
`{"intent": "HassLightSet", "entity_id": "light.desk", "brightness": 50}`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from urllib.parse import urlsplit

from sori.actions.base import Command, Result
from sori.errors import BackendError, ConfigError, DependencyError

log = logging.getLogger(__name__)

DEFAULT_TOPIC = "sori/{domain}/{object_id}/set"

_SWITCH_PAYLOADS = {
    "cover": ("OPEN", "CLOSE"),
    "valve": ("OPEN", "CLOSE"),
    "lock": ("LOCK", "UNLOCK"),
}


def payload_for(command: Command) -> str:
    """The message body for `command`."""
    on, off = _SWITCH_PAYLOADS.get(command.domain, ("ON", "OFF"))
    if command.intent == "HassTurnOn" and not command.settings():
        return on
    if command.intent == "HassTurnOff" and not command.settings():
        return off
    return command.payload_json()


def topic_for(command: Command, template: str = DEFAULT_TOPIC) -> str:
    """The command topic: the device's override, else the template filled in."""
    if command.topic:
        return command.topic
    return template.format(
        domain=command.domain, object_id=command.object_id, entity_id=command.entity_id
    )


def parse_url(url: str) -> tuple[str, int, bool]:
    """ "mqtt://host:1883" → ("host", 1883, False); "mqtts://host" → ("host", 8883, True)."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl") or not parts.hostname:
        raise ConfigError(f"mqtt.url = {url!r} must look like mqtt://HOST:PORT or mqtts://HOST")
    tls = parts.scheme in ("mqtts", "ssl")
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError:
        raise ConfigError(f"mqtt.url = {url!r} has an invalid port") from None
    return parts.hostname, port, tls


class MqttHandler:
    """Publishes commands to a broker; connects in the background and keeps reconnecting."""

    name = "mqtt"

    def __init__(
        self,
        url: str,
        topic: str = DEFAULT_TOPIC,
        qos: int = 1,
        retain: bool = False,
        client_id: str = "sori",
        username: str = "",
        password: str = "",
        timeout_s: float = 2.0,
    ) -> None:
        try:
            import paho.mqtt.client as mqtt
        except ImportError:
            raise DependencyError("MQTT needs paho-mqtt; run 'pip install paho-mqtt'") from None
        self.host, self.port, tls = parse_url(url)
        self.url = url
        self.topic = topic
        self.qos = qos
        self.retain = retain
        self.timeout_s = timeout_s
        self._connected = threading.Event()
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        if username:
            self._client.username_pw_set(username, password or None)
        if tls:
            self._client.tls_set()
        self._client.reconnect_delay_set(min_delay=1, max_delay=30)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._started = False

    def _on_connect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        if reason_code.is_failure:
            log.warning("MQTT broker %s refused the connection: %s", self.url, reason_code)
            return
        log.info("MQTT connected to %s", self.url)
        self._connected.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        if self._connected.is_set():
            log.warning("MQTT disconnected from %s: %s", self.url, reason_code)
        self._connected.clear()

    def start(self) -> None:
        """Start connecting in the background (idempotent); commands wait for it briefly."""
        if not self._started:
            self._started = True
            self._client.connect_async(self.host, self.port, keepalive=30)
            self._client.loop_start()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def handle(self, command: Command) -> Result:
        self.start()
        topic = topic_for(command, self.topic)
        payload = payload_for(command)
        await asyncio.to_thread(self._publish, topic, payload)
        return Result(detail=f"{topic} {payload}")

    def _publish(self, topic: str, payload: str) -> None:
        if not self._connected.wait(self.timeout_s):
            raise BackendError(
                f"MQTT broker {self.url} is not reachable; is mosquitto running? (check mqtt.url)"
            )
        info = self._client.publish(topic, payload, qos=self.qos, retain=self.retain)
        if info.rc != 0:
            raise BackendError(f"MQTT publish to {topic} failed (rc={info.rc})")
        if self.qos > 0:
            info.wait_for_publish(self.timeout_s)
            if not info.is_published():
                raise BackendError(f"MQTT broker {self.url} did not acknowledge {topic}")

    async def close(self) -> None:
        if self._started:
            await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()
        self._started = False
