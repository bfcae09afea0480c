"""Device state from MQTT state topics: retained messages read at start-up, kept current.

Topic: `sori/<domain>/<object_id>/state` by default (a template; per-device override,
`home.devices[].state_topic`). The source subscribes to every device's topic when it
connects; the broker hands over each retained message at once and every later one as it
is published. Payload: plain ("ON", "OFF", "open", "23.5") or a JSON object with a
"state" key and attributes (`{"state": "on", "current_temperature": 23.5}`).

Nothing is ever published: this client only subscribes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping

from sori.acting.mqtt_connection import client_id_for, import_paho, prepare
from sori.acting.state.base import Reading, parse_payload
from sori.core.errors import BackendError
from sori.core.home import Device

log = logging.getLogger(__name__)

DEFAULT_STATE_TOPIC = "sori/{domain}/{object_id}/state"

SETTLE_S = 0.3
"""After the broker acknowledges a subscription, how long a topic without a message yet
may still get its retained one, in seconds (mosquitto sends them right after the ack)."""


def state_topic(device: Device, template: str = DEFAULT_STATE_TOPIC, override: str = "") -> str:
    """The device's state topic: its override, else the template filled in."""
    if override:
        return override
    object_id = device.id.split(".", 1)[-1]
    return template.format(domain=device.domain, object_id=object_id, entity_id=device.id)


class MqttStateSource:
    """Subscribes to the state topics of the home's devices and keeps their last message."""

    name = "mqtt"

    def __init__(
        self,
        host: str,
        port: int,
        tls: bool = False,
        topics: Mapping[str, str] | None = None,
        client_id: str = "",
        username: str = "",
        password: str = "",
        timeout_s: float = 2.0,
        url: str = "",
    ) -> None:
        mqtt = import_paho()
        self.host, self.port = host, port
        self.url = url or f"mqtt://{host}:{port}"
        self.timeout_s = timeout_s
        """How long a read waits for the connection and the first messages, in seconds."""
        self._topics: dict[str, str] = dict(topics or {})
        self._values: dict[str, str] = {}
        self._acked_at: dict[str, float] = {}
        self._mids: dict[int, list[str]] = {}
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._started = False
        self._client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=client_id_for(client_id, "state")
        )
        prepare(self._client, tls, username, password)
        self._client.reconnect_delay_set(0.2, 5)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message

    def watch(self, topics: Mapping[str, str]) -> None:
        """Follow these topics (entity id → topic) from now on (a reload's new home)."""
        with self._lock:
            new = {t for t in topics.values()} - set(self._topics.values())
            self._topics = dict(topics)
        if new and self._connected.is_set():
            self._subscribe(sorted(new))

    def start(self) -> None:
        """Connect in the background (idempotent); reads wait for it briefly."""
        if not self._started:
            self._started = True
            self._client.connect_async(self.host, self.port, keepalive=30)
            self._client.loop_start()

    def _on_connect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        if getattr(reason_code, "is_failure", False):
            log.warning("MQTT broker %s refused the state connection: %s", self.url, reason_code)
            return
        self._connected.set()
        with self._lock:
            topics = sorted(set(self._topics.values()))
        self._subscribe(topics)

    def _subscribe(self, topics: list[str]) -> None:
        if not topics:
            return
        result, mid = self._client.subscribe([(t, 1) for t in topics])
        with self._lock:
            self._mids[mid] = topics

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties=None) -> None:  # noqa: ANN001
        now = time.monotonic()
        with self._lock:
            for topic in self._mids.pop(mid, []):
                self._acked_at[topic] = now

    def _on_disconnect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        self._connected.clear()
        with self._lock:
            self._acked_at.clear()  # resubscribed (and retained messages resent) on reconnect

    def _on_message(self, client, userdata, message) -> None:  # noqa: ANN001
        try:
            payload = message.payload.decode("utf-8")
        except UnicodeDecodeError:
            log.warning("MQTT state on %s is not UTF-8; ignored", message.topic)
            return
        with self._lock:
            if payload:
                self._values[message.topic] = payload
            else:  # an empty retained message clears the topic
                self._values.pop(message.topic, None)

    def topic_of(self, device: Device) -> str:
        with self._lock:
            return self._topics.get(device.id) or state_topic(device)

    def covers(self, device: Device) -> bool:
        return True

    async def read(self, device: Device) -> Reading | None:
        self.start()
        topic = self.topic_of(device)
        deadline = time.monotonic() + self.timeout_s
        while True:
            with self._lock:
                payload = self._values.get(topic)
                acked = self._acked_at.get(topic)
            if payload is not None:
                return parse_payload(device.id, payload, self.name)
            now = time.monotonic()
            if acked is not None and now - acked >= SETTLE_S:
                return None  # subscribed, and the broker holds no message for it
            if now >= deadline:
                if not self._connected.is_set():
                    raise BackendError(
                        f"MQTT broker {self.url} is not reachable for state; is mosquitto "
                        "running? (check mqtt.url)"
                    )
                return None
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        if self._started:
            self._started = False
            await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()
