"""Fault injection on a real mosquitto of each test's own: frozen, killed and restarted,
slow. A subscriber stamps every arrival; nothing of a command may arrive after its
deadline, and a command never reported done is never carried out later."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from broker import Mosquitto
from faults import Relay, Stamped
from sori.acting.actions.base import Command, NotConfirmed
from sori.acting.actions.mqtt import MqttHandler
from sori.core.errors import BackendError
from sori.core.home import Device

LAMP = Device("light.living_room", "거실 조명", "light", "living_room")


def send(handler: MqttHandler, n: int, timeout_s: float) -> tuple[str, int]:
    """Command number `n` (brightness n) with a deadline `timeout_s` from now; its outcome."""
    deadline_ns = time.monotonic_ns() + int(timeout_s * 1e9)
    command = Command("HassLightSet", {"brightness": n}, LAMP, deadline_ns=deadline_ns)
    try:
        asyncio.run(handler.handle(command))
    except NotConfirmed:
        return "unconfirmed", deadline_ns
    except BackendError:
        return "failed", deadline_ns
    return "done", deadline_ns


def number(payload: str) -> int:
    return json.loads(payload)["brightness"]


def wait_connected(handler: MqttHandler, timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while not handler.connected:
        assert time.monotonic() < end, "the handler never reconnected"
        time.sleep(0.02)


@pytest.fixture
def broker(tmp_path):
    b = Mosquitto(tmp_path)
    yield b
    b.close()


@pytest.fixture
def handlers():
    made: list[MqttHandler] = []

    def make(url: str, **kw) -> MqttHandler:
        handler = MqttHandler(url, client_id=f"sori-faults-{len(made)}", **kw)
        handler.start()
        made.append(handler)
        wait_connected(handler)
        return handler

    yield make
    for handler in made:
        asyncio.run(handler.close())


def test_a_frozen_broker_never_carries_out_a_command_late_20_times(broker, handlers):
    sub = Stamped(broker.url)
    handler = handlers(broker.url)
    outcomes = []
    for n in range(20):
        wait_connected(handler)
        broker.freeze()
        outcome, deadline_ns = send(handler, n, 0.3)
        returned_ns = time.monotonic_ns()
        time.sleep(0.2)  # still frozen past the deadline
        broker.thaw()
        outcomes.append(outcome)
        assert sub.round_trip() == [], f"command {n} arrived after the broker resumed"
        assert returned_ns < deadline_ns + 0.25e9, "the handler overran the deadline"
    assert set(outcomes) == {"unconfirmed"}  # written, never acknowledged: not "done"
    wait_connected(handler)
    outcome, deadline_ns = send(handler, 99, 2.0)
    assert outcome == "done"
    (arrived_ns, topic, payload), *rest = sub.round_trip()
    assert (outcome, topic, number(payload), rest) == ("done", "sori/light/living_room/set", 99, [])
    assert arrived_ns <= deadline_ns
    sub.close()


def test_a_command_right_after_a_reset_waits_for_the_new_connection(broker, handlers):
    """On a busy board paho's thread may see the reset socket close late; a command sent
    meanwhile must wait for the new connection, not go down with the old one."""
    sub = Stamped(broker.url)
    handler = handlers(broker.url)
    seen_late = handler._client.on_disconnect

    def busy_paho_thread(*args, **kwargs) -> None:
        time.sleep(0.3)
        seen_late(*args, **kwargs)

    handler._client.on_disconnect = busy_paho_thread
    broker.freeze()
    unanswered, _ = send(handler, 1, 0.3)
    broker.thaw()
    outcome, deadline_ns = send(handler, 2, 3.0)
    arrived = sub.round_trip()
    assert (unanswered, outcome) == ("unconfirmed", "done")
    assert [number(p) for _, _, p in arrived] == [2]
    assert arrived[0][0] <= deadline_ns
    sub.close()


def test_a_failed_command_never_reaches_a_restarted_broker(broker, handlers):
    relay = Relay(broker.port)  # lets the test hold the handler off until it listens
    handler = handlers(relay.url)
    broker.freeze()
    unanswered, _ = send(handler, 1, 0.3)
    relay.open = False
    broker.kill()  # dies with command 1 unread in its socket
    while handler.connected:
        time.sleep(0.01)
    unreachable, _ = send(handler, 2, 0.3)
    broker.start()  # the same port
    sub = Stamped(broker.url)
    relay.open = True
    wait_connected(handler)
    outcome, deadline_ns = send(handler, 3, 2.0)
    arrived = sub.round_trip()
    assert (unanswered, unreachable, outcome) == ("unconfirmed", "failed", "done")
    assert [number(p) for _, _, p in arrived] == [3]  # 1 and 2 were never resent
    assert arrived[0][0] <= deadline_ns
    sub.close()
    relay.close()


def test_a_slow_broker_gets_nothing_after_the_deadline(broker, handlers):
    sub = Stamped(broker.url)
    relay = Relay(broker.port)
    handler = handlers(relay.url)
    relay.delay_s = 0.4  # each way: the PUBLISH reaches the broker after the deadline
    outcome, deadline_ns = send(handler, 1, 0.3)
    time.sleep(1.0)  # the broker got it and answered; nobody releases it
    assert outcome == "unconfirmed"
    assert sub.round_trip() == []
    relay.delay_s = 0.05  # slow, but within the deadline
    wait_connected(handler)
    outcome, deadline_ns = send(handler, 2, 2.0)
    arrived = sub.round_trip()
    assert outcome == "done" and [number(p) for _, _, p in arrived] == [2]
    assert arrived[0][0] <= deadline_ns
    sub.close()
    relay.close()


def test_an_expired_command_is_not_kept_for_a_subscriber_that_was_away(broker, handlers):
    import paho.mqtt.client as mqtt

    def away_subscriber(clean: bool) -> mqtt.Client:
        client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id="away", protocol=mqtt.MQTTv5
        )
        client.got = []
        client.on_message = lambda c, u, m: c.got.append(m.payload.decode())
        props = mqtt.Properties(mqtt.PacketTypes.CONNECT)
        props.SessionExpiryInterval = 300  # a persistent session: the broker queues for it
        client.connect("127.0.0.1", broker.port, clean_start=clean, properties=props)
        client.loop_start()
        client.subscribe("sori/#", qos=2)[1]
        return client

    away = away_subscriber(clean=True)
    time.sleep(0.2)
    away.disconnect()
    away.loop_stop()
    handler = handlers(broker.url)
    assert send(handler, 7, 0.9)[0] == "done"  # expires 1 s after it reached the broker
    time.sleep(2.2)  # the broker's clock counts whole seconds
    back = away_subscriber(clean=False)
    time.sleep(0.5)
    back.disconnect()
    back.loop_stop()
    assert back.got == []


def test_a_round_trip_returns_what_the_broker_delivered_before_it(broker):
    """The other tests' witness: a command the broker acknowledged is among what a round
    trip right after it returns, even when the subscriber has not read it yet."""
    sub = Stamped(broker.url)
    publisher = MqttHandler(broker.url, client_id="sori-publisher")
    publisher.start()
    wait_connected(publisher)
    seen = []
    for n in range(30):
        assert send(publisher, n, 2.0)[0] == "done"
        seen.append([number(p) for _, _, p in sub.round_trip()])
    assert seen == [[n] for n in range(30)]
    asyncio.run(publisher.close())
    sub.close()
