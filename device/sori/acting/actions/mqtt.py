"""MQTT commands (paho-mqtt), in the spirit of Home Assistant's MQTT conventions.

Topic: `sori/<domain>/<object_id>/set` by default (a template; per-device override).
Payload: `ON`/`OFF` for HassTurnOn/HassTurnOff (`OPEN`/`CLOSE` for covers,
`LOCK`/`UNLOCK` for locks), JSON with the intent and its settings for anything else:
`{"intent": "HassLightSet", "entity_id": "light.desk", "brightness": 50}`. A device may
bring its own (`home.devices[].payload_on`, `payload_off`, and `payload`, a JSON template):
Zigbee2MQTT's `zigbee2mqtt/<name>/set` `{"state": "ON", "brightness": 128}`, Tasmota's
`cmnd/<topic>/POWER` `ON`.

Delivery: at most once, never after the command's deadline (`actions.timeout_s` from the
commit, `Command.deadline_ns`). How:

- QoS 2 by default (`mqtt.qos`). The broker keeps a QoS 2 PUBLISH until our PUBREL
  releases it; mosquitto forwards it to subscribers only then. We send PUBREL only for a
  PUBREC that arrives before the deadline; at the deadline an unanswered message is taken
  out of paho's queue, so a broker that was frozen or slow and answers late holds a message
  nobody releases. QoS 1 and 0 cannot be withdrawn once written: a frozen broker that
  resumes delivers them late (still reported "sent, not confirmed", never "done").
- Clean session (MQTT 5 clean start with session expiry 0; clean_session on 3.1.1): the
  broker forgets our session, and any unreleased message in it, when the connection ends.
  After withdrawing a message that was written, the connection is reset so that happens.
- Nothing is queued while disconnected and nothing is resent on reconnect: a publish
  refused for want of a connection is dropped at once, and messages still unacknowledged
  when the connection drops are dropped with it (paho would otherwise resend them).
- MQTT 5 message expiry (`mqtt.protocol = "5"`, the default): each PUBLISH carries the
  seconds left to its deadline (rounded up, at least 1), so a broker never hands it to a
  subscriber that reconnects later (a persistent session) after that.

The user hears the truth: success (PUBCOMP/PUBACK in time), failure (never sent: no
connection, refused), or "sent, not confirmed" (`NotConfirmed`: written but not
acknowledged by the deadline; with QoS 0 always, since QoS 0 has no acknowledgement).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sori.acting.actions.base import Command, NotConfirmed, Result
from sori.acting.mqtt_connection import client_id_for, import_paho, parse_url, prepare
from sori.core.errors import BackendError, ConfigError

log = logging.getLogger(__name__)

DEFAULT_TOPIC = "sori/{domain}/{object_id}/set"

PROTOCOLS = ("5", "3.1.1")
"""`mqtt.protocol` values: MQTT 5 (message expiry) or 3.1.1 for brokers without it."""

_SWITCH_PAYLOADS = {
    "cover": ("OPEN", "CLOSE"),
    "valve": ("OPEN", "CLOSE"),
    "lock": ("LOCK", "UNLOCK"),
}


def payload_for(command: Command) -> str:
    """The message body for `command`: the device's own payload_on / payload_off or
    template when it has them (Zigbee2MQTT, Tasmota), else Sori's conventions."""
    on, off = _SWITCH_PAYLOADS.get(command.domain, ("ON", "OFF"))
    plain = not command.settings()
    if command.intent == "HassTurnOn" and plain and command.payload_on:
        return command.payload_on
    if command.intent == "HassTurnOff" and plain and command.payload_off:
        return command.payload_off
    if command.payload:
        return json.dumps(fill(command.payload, template_values(command)), ensure_ascii=False)
    if command.intent == "HassTurnOn" and plain:
        return on
    if command.intent == "HassTurnOff" and plain:
        return off
    return command.payload_json()


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def template_values(command: Command) -> dict[str, Any]:
    """What a payload template may name, for this command; absent when it has no value."""
    on, off = _SWITCH_PAYLOADS.get(command.domain, ("ON", "OFF"))
    s = command.slots
    values: dict[str, Any] = {"intent": command.intent, "entity_id": command.entity_id}
    state = {"HassTurnOn": on, "HassTurnOff": off, "HassLightSet": "ON"}.get(command.intent)
    if state:
        values["state"] = state
    if isinstance(s.get("brightness"), (int, float)):
        values["brightness"] = s["brightness"]
        values["brightness_255"] = round(s["brightness"] * 255 / 100)
    for key in ("temperature", "position", "color", "percentage", "volume_level"):
        if s.get(key) not in (None, ""):
            values[key] = s[key]
    return values


def fill(template: Any, values: dict[str, Any]) -> Any:
    """`template` with its placeholders filled: a value that is one placeholder takes the
    value's own type (a number stays a number); a key whose placeholder has no value is
    left out, and so is a table left empty."""
    if isinstance(template, dict):
        out = {}
        for key, value in template.items():
            filled = fill(value, values)
            if filled is not _MISSING and filled != {}:
                out[key] = filled
        return out
    if isinstance(template, list):
        return [v for v in (fill(v, values) for v in template) if v is not _MISSING]
    if not isinstance(template, str):
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole:
        return values.get(whole.group(1), _MISSING)
    names = _PLACEHOLDER.findall(template)
    if any(name not in values for name in names):
        return _MISSING
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


_MISSING = object()
"""A placeholder the command has no value for."""


def topic_for(command: Command, template: str = DEFAULT_TOPIC) -> str:
    """The command topic: the device's override, else the template filled in."""
    if command.topic:
        return command.topic
    return template.format(
        domain=command.domain, object_id=command.object_id, entity_id=command.entity_id
    )


@dataclass
class _Pending:
    """One published message waiting for its acknowledgement."""

    written: bool = False
    """True once paho reported it sent (state past "publish"); set at withdrawal."""
    outcome: str = ""
    """"confirmed", "refused: REASON", why it was dropped, or "" while waiting."""
    done: threading.Event = field(default_factory=threading.Event)


class MqttHandler:
    """Publishes commands to a broker; connects in the background and keeps reconnecting."""

    name = "mqtt"
    enforces_deadline = True
    """It stops at `Command.deadline_ns` itself and reports how (see the registry)."""

    def __init__(
        self,
        url: str,
        topic: str = DEFAULT_TOPIC,
        qos: int = 2,
        retain: bool = False,
        client_id: str = "",
        username: str = "",
        password: str = "",
        timeout_s: float = 3.0,
        protocol: str = "5",
    ) -> None:
        mqtt = import_paho()
        client_id = client_id_for(client_id)
        if protocol not in PROTOCOLS:
            raise ConfigError(f"mqtt.protocol = {protocol!r} must be one of {PROTOCOLS}")
        if qos not in (0, 1, 2):
            raise ConfigError(f"mqtt.qos = {qos!r} must be 0, 1 or 2 (2 is at most once)")
        self._mqtt = mqtt
        self.host, self.port, tls = parse_url(url)
        self.url = url
        self.topic = topic
        self.qos = qos
        self.retain = retain
        self.timeout_s = timeout_s
        """Deadline of a command that comes without one, in seconds."""
        self.v5 = protocol == "5"
        self._connected = threading.Event()
        self._pending: dict[int, _Pending] = {}
        if self.v5:
            self._client = mqtt.Client(
                mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5
            )
        else:
            self._client = mqtt.Client(
                mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                protocol=mqtt.MQTTv311, clean_session=True,
            )  # fmt: skip
        # paho guards its queue of unacknowledged messages with this lock and holds it while
        # it answers PUBREC with PUBREL; withdrawing under it makes the two exclusive.
        self._lock = self._client._out_message_mutex
        prepare(self._client, tls, username, password)
        # quick after the reset that follows a withdrawal; at most 5 s on a LAN broker
        self._client.reconnect_delay_set(min_delay=0.25, max_delay=5)  # type: ignore[arg-type]
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_publish = self._on_publish
        self._started = False

    def _on_connect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        # paho resends what it still holds right after this callback; hold nothing.
        self._drop_all("reconnected")
        if reason_code.is_failure:
            log.warning("MQTT broker %s refused the connection: %s", self.url, reason_code)
            return
        log.info("MQTT connected to %s", self.url)
        self._connected.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        was_connected = self._connected.is_set()
        self._connected.clear()
        self._drop_all("the connection was lost")
        if was_connected and self._started:
            log.warning("MQTT disconnected from %s: %s", self.url, reason_code)

    def _on_publish(self, client, userdata, mid, reason_code, properties=None) -> None:  # noqa: ANN001
        with self._lock:
            pending = self._pending.get(mid)
            if pending is None:
                return
            pending.written = True
            failed = getattr(reason_code, "is_failure", False)
            pending.outcome = f"refused: {reason_code}" if failed else "confirmed"
            pending.done.set()

    def _drop_all(self, why: str) -> None:
        """Forget every unacknowledged message, so paho never resends one later."""
        with self._lock:
            for mid in list(self._client._out_messages):
                pending = self._pending.get(mid)
                state = self._withdraw(mid)
                if pending is not None and not pending.outcome:
                    pending.written = self._was_written(state)
                    pending.outcome = why
                    pending.done.set()
                log.info("MQTT message %d dropped (%s); it is never resent", mid, why)

    def _withdraw(self, mid: int) -> int | None:
        """Take message `mid` out of paho's queue; its state then, or None if not there."""
        with self._lock:
            message = self._client._out_messages.pop(mid, None)
            if message is None:
                return None
            m = self._mqtt
            in_flight = (m.mqtt_ms_wait_for_puback, m.mqtt_ms_wait_for_pubrec)
            if message.state in (*in_flight, m.mqtt_ms_wait_for_pubcomp):
                self._client._inflight_messages = max(0, self._client._inflight_messages - 1)
            return message.state

    def _was_written(self, state: int | None) -> bool:
        """Whether a message in paho state `state` may have left (paho marks it waiting for
        the acknowledgement as it queues the bytes: counted as sent, to be safe)."""
        m = self._mqtt
        return state in (m.mqtt_ms_wait_for_puback, m.mqtt_ms_wait_for_pubrec,
                         m.mqtt_ms_wait_for_pubcomp, m.mqtt_ms_resend_pubrel)  # fmt: skip

    def _reset_connection(self) -> None:
        """End the connection; the broker drops our clean session with anything unreleased,
        and paho reconnects on its own. Not connected from here on: a command sent before
        paho's thread has seen the socket close would be lost with it."""
        self._connected.clear()
        sock = self._client.socket()
        log.warning(
            "MQTT: resetting the connection to %s so it forgets a withdrawn command", self.url
        )
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def start(self) -> None:
        """Start connecting in the background (idempotent); commands wait for it briefly."""
        if not self._started:
            self._started = True
            if self.v5:
                self._client.connect_async(self.host, self.port, keepalive=30, clean_start=True)
            else:
                self._client.connect_async(self.host, self.port, keepalive=30)
            self._client.loop_start()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def handle(self, command: Command) -> Result:
        self.start()
        command = command.with_deadline(self.timeout_s)
        topic = topic_for(command, self.topic)
        payload = payload_for(command)
        await asyncio.to_thread(self._publish, topic, payload, command.deadline_ns)
        return Result(detail=f"{topic} {payload}")

    def _publish(self, topic: str, payload: str, deadline_ns: int) -> None:
        """Send once and wait for the acknowledgement until `deadline_ns`; withdraw after."""

        def left_s() -> float:
            return max(0.0, (deadline_ns - time.monotonic_ns()) / 1e9)

        if not self._connected.wait(left_s()):
            raise BackendError(
                f"MQTT broker {self.url} is not reachable; is mosquitto running? (check mqtt.url)"
            )
        properties = None
        if self.v5:
            from paho.mqtt.packettypes import PacketTypes
            from paho.mqtt.properties import Properties

            properties = Properties(PacketTypes.PUBLISH)
            properties.MessageExpiryInterval = max(1, math.ceil(left_s()))
        with self._lock:  # registered before paho's thread can see its acknowledgement
            info = self._client.publish(
                topic, payload, qos=self.qos, retain=self.retain, properties=properties
            )
            pending = self._pending[info.mid] = _Pending()
        try:
            if info.rc != self._mqtt.MQTT_ERR_SUCCESS:
                self._withdraw(info.mid)  # paho would send it on reconnect: never
                if info.rc == self._mqtt.MQTT_ERR_NO_CONN:
                    raise BackendError(f"MQTT broker {self.url} is not reachable; nothing sent")
                raise BackendError(f"MQTT publish to {topic} failed (rc={info.rc}); nothing sent")
            if self.qos == 0:
                raise NotConfirmed(f"{topic} {payload} sent with QoS 0, which is never confirmed")
            pending.done.wait(left_s())
            with self._lock:
                if not pending.outcome:
                    pending.written = self._was_written(self._withdraw(info.mid))
                    pending.outcome = "no acknowledgement by the deadline"
            if pending.outcome == "confirmed":
                return
            if pending.outcome.startswith("refused"):
                raise BackendError(f"MQTT broker {self.url} {pending.outcome} for {topic}")
            if not pending.written:
                raise BackendError(
                    f"MQTT broker {self.url} could not be reached in time; {topic} not sent"
                )
            if pending.outcome.endswith("deadline"):
                self._reset_connection()
            raise NotConfirmed(
                f"{topic} {payload} was sent but not confirmed by MQTT broker {self.url} "
                f"({pending.outcome}); Sori never resends it"
            )
        finally:
            with self._lock:
                self._pending.pop(info.mid, None)

    async def close(self) -> None:
        if self._started:
            await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._started = False
        self._client.disconnect()
        self._client.loop_stop()
        self._drop_all("closing")
