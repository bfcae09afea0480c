"""The speakers' wake claims on the home's MQTT broker (`[wake] arbitrate`): each speaker
publishes on `TOPIC` what it heard, or that it heard nothing (a pass), and reads
everyone's (`sori.serving.conversation.arbitration` decides who answers).

Claims and passes go at QoS 0 and are never retained: one that arrives late is worth
nothing, and a speaker that misses one answers as if alone. Each run of a speaker also
says it is online, retained on `PRESENCE/<run>` (its node id), and cleared when it
leaves: by itself on a clean stop, by the broker (its last will) when the connection
dies."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sori.acting.mqtt_connection import client_id_for, import_paho, leave, parse_url, prepare
from sori.serving.conversation.arbitration import WakeClaim, WakePass, claim_json, read_claim

log = logging.getLogger(__name__)

TOPIC = "sori/wake/claims"
"""Shared by every speaker on the broker, whatever its node id."""
PRESENCE = "sori/wake/speakers"
"""`PRESENCE/<run>` holds a speaker's node id while that run is online (retained)."""


class MqttWakeClaims:
    """Publishes this speaker's claims and passes (`publish`) and presence, and hands every
    claim and pass on the topic to `on_claim` and every run's coming and going to
    `on_presence(run, online)` (on paho's thread)."""

    def __init__(
        self,
        url: str,
        speaker: str,
        run: str,
        on_claim: Callable[[WakeClaim | WakePass], None],
        on_presence: Callable[[str, bool], None],
        username: str = "",
        password: str = "",
        client_id: str = "",
    ) -> None:
        mqtt = import_paho()
        self.host, self.port, tls = parse_url(url)
        self.url, self.speaker = url, speaker
        self.on_claim, self.on_presence = on_claim, on_presence
        self.presence = f"{PRESENCE}/{run}"
        self.connected = threading.Event()
        self._client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=client_id_for(client_id, "claims")
        )
        prepare(self._client, tls, username, password)
        self._client.will_set(self.presence, b"", qos=1, retain=True)  # clears it
        self._client.reconnect_delay_set(min_delay=0.25, max_delay=5)  # type: ignore[arg-type]
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = lambda *a: self.connected.clear()
        self._client.on_message = self._on_message
        self._started = False
        self._ignored = 0

    def start(self) -> None:
        """Connect in the background (and again after a loss); idempotent."""
        if not self._started:
            self._started = True
            self._client.connect_async(self.host, self.port, keepalive=30)
            self._client.loop_start()

    def publish(self, claim: WakeClaim | WakePass) -> bool:
        """Send `claim` (or a pass) to the other speakers; False when the broker cannot be
        reached."""
        if not self.connected.is_set():
            return False
        info = self._client.publish(TOPIC, claim_json(claim), qos=0)
        return info.rc == 0

    def _on_connect(self, client, userdata, flags, reason_code, properties=None) -> None:  # noqa: ANN001
        if reason_code.is_failure:
            log.warning("wake arbitration: %s refused the connection: %s", self.url, reason_code)
            return
        client.publish(self.presence, self.speaker, qos=1, retain=True)
        client.subscribe([(TOPIC, 0), (f"{PRESENCE}/+", 1)])
        self.connected.set()
        log.info("wake arbitration: speakers on %s compare wake phrases on %s", self.url, TOPIC)

    def _on_message(self, client, userdata, message) -> None:  # noqa: ANN001
        if message.topic.startswith(f"{PRESENCE}/"):
            run = message.topic.removeprefix(f"{PRESENCE}/")
            self.on_presence(run, bool(message.payload))
            return
        claim = read_claim(message.payload)
        if claim is None:
            self._ignored += 1
            if self._ignored == 1:  # another program on the topic: said once
                log.warning("wake arbitration: a message on %s is no claim; ignored", TOPIC)
            return
        self.on_claim(claim)

    def close(self) -> None:
        """Say this run has left (a clean goodbye: the last will is not sent), and leave."""
        if self._started:
            self._started = False
            leave(self._client, self.presence, b"", self.connected)
