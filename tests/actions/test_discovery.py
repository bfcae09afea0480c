"""Sori in Home Assistant through MQTT discovery, on a real mosquitto: the retained configs
read back as HA reads them, availability with a last will that the broker sends when the
process is killed, and HA's volume command reaching the speaker through a real daemon."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import time
from pathlib import Path

import fake_amixer
import pytest

from broker import Subscriber, clear_retained
from daemon_kit import build, write_config
from sori.acting.actions.discovery import MqttPresence
from sori.core.events import WakeDetected

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_retained_message_left(mosquitto):
    """The broker is shared by the session: leave no retained message for other tests."""
    yield
    clear_retained(mosquitto)


def retained(url: str, wanted: set[str], timeout_s: float = 10.0) -> dict[str, str]:
    """Messages of `wanted` topics as a new client sees them: the retained ones."""
    sub = Subscriber(url)
    seen: dict[str, str] = {}
    end = time.monotonic() + timeout_s
    try:
        while not wanted <= seen.keys() and time.monotonic() < end:
            try:
                topic, payload = sub.next(timeout_s=0.5)
            except queue.Empty:
                continue
            if topic in wanted:
                seen[topic] = payload
    finally:
        sub.close()
    return seen


def wait_for(sub: Subscriber, topic: str, payload: str, timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            if sub.next(timeout_s=0.5) == (topic, payload):
                return
        except queue.Empty:
            continue
    raise AssertionError(f"no {payload!r} on {topic}")


def test_one_device_config_is_retained_in_home_assistants_device_shape(mosquitto):
    presence = MqttPresence(mosquitto, node_id="kitchen_speaker")
    presence.start()
    try:
        assert presence.connected.wait(10)
        presence.state("last_command", "거실 불 켜줘")
        presence.state("last_reply", "거실 조명을 켰어요." * 30)
        topics = {
            "homeassistant/device/kitchen_speaker/config",
            "sori/kitchen_speaker/availability",
            "sori/kitchen_speaker/last_command",
            "sori/kitchen_speaker/last_reply",
        }
        seen = retained(mosquitto, topics)
    finally:
        presence.close()
    assert seen.keys() == topics
    config = json.loads(seen["homeassistant/device/kitchen_speaker/config"])
    assert config["dev"]["ids"] == ["sori_kitchen_speaker"]
    assert {"name", "mf", "mdl", "sw"} <= config["dev"].keys()
    assert config["o"]["name"] == "sori"
    assert config["availability_topic"] == "sori/kitchen_speaker/availability"
    cmps = config["cmps"]
    assert {k: c["p"] for k, c in cmps.items()} == {
        "mute": "switch", "volume": "number", "listening": "binary_sensor",
        "last_command": "sensor", "last_reply": "sensor",
    }  # fmt: skip
    assert cmps["mute"]["command_topic"] == "sori/kitchen_speaker/mute/set"
    assert cmps["mute"]["state_topic"] == "sori/kitchen_speaker/mute"
    assert cmps["mute"]["unique_id"] == "kitchen_speaker_mute"  # as before: HA keeps it
    assert (cmps["volume"]["min"], cmps["volume"]["max"], cmps["volume"]["command_topic"]) == (
        0, 100, "sori/kitchen_speaker/volume/set",
    )  # fmt: skip
    assert cmps["listening"]["state_topic"] == "sori/kitchen_speaker/listening"
    assert cmps["last_reply"]["state_topic"] == "sori/kitchen_speaker/last_reply"
    assert len({c["unique_id"] for c in cmps.values()}) == 5
    assert seen["sori/kitchen_speaker/availability"] == "online"
    assert seen["sori/kitchen_speaker/last_command"] == "거실 불 켜줘"
    assert len(seen["sori/kitchen_speaker/last_reply"]) == 255  # HA's longest state
    # A clean goodbye leaves "offline" retained.
    assert retained(mosquitto, {"sori/kitchen_speaker/availability"}) == {
        "sori/kitchen_speaker/availability": "offline"
    }


def test_the_old_per_entity_configs_are_migrated_and_cleared(mosquitto):
    old = [
        "homeassistant/switch/attic/mute/config",
        "homeassistant/number/attic/volume/config",
        "homeassistant/sensor/attic/last_command/config",
    ]
    device = "homeassistant/device/attic/config"
    sub = Subscriber(mosquitto)
    try:
        for topic in old:  # what an earlier Sori left retained
            sub._client.publish(topic, '{"name": "old"}', qos=1, retain=True).wait_for_publish(5)
        while True:
            try:
                sub.next(timeout_s=0.5)
            except queue.Empty:
                break
        presence = MqttPresence(mosquitto, node_id="attic")
        presence.start()
        try:
            assert presence.connected.wait(10)
            said: list[tuple[str, str]] = []
            while len(said) < 7:
                topic, payload = sub.next(timeout_s=5)
                if topic in (*old, device):
                    said.append((topic, payload if topic in old else "(device)"))
        finally:
            presence.close()
    finally:
        sub.close()
    migrate = '{"migrate_discovery": true}'
    # HA's documented order: migrate each old entity, announce the device, clear the old
    assert said == [(t, migrate) for t in old] + [(device, "(device)")] + [(t, "") for t in old]
    assert set(retained(mosquitto, {*old, device}, timeout_s=2)) == {device}


def test_the_last_will_says_offline_when_the_process_is_killed(mosquitto):
    code = (
        "import time\nfrom sori.acting.actions.discovery import MqttPresence\n"
        f"p = MqttPresence({mosquitto!r}, node_id='killed')\np.start()\n"
        "p.connected.wait(10)\nprint('up', flush=True)\ntime.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "device")}
    sub = Subscriber(mosquitto)
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "up"
        wait_for(sub, "sori/killed/availability", "online")
        proc.send_signal(signal.SIGKILL)  # no goodbye: the broker sends the will
        proc.wait(10)
        wait_for(sub, "sori/killed/availability", "offline")
    finally:
        proc.kill()
        sub.close()
    assert retained(mosquitto, {"sori/killed/availability"}) == {
        "sori/killed/availability": "offline"
    }


def on_a_discovery_daemon(tmp_path, mosquitto, monkeypatch, node, steps):
    """Run `steps(daemon, sub)` on a daemon announced as `node`, with its speaker on the
    fake mixer, once Home Assistant sees it online; return what `steps` returned and the
    mixer's state file. The daemon is closed after."""
    amixer, state = fake_amixer.install(tmp_path, monkeypatch, "default", "Master")
    extra = f'discovery = true\nnode_id = "{node}"\n\n[speaker]\namixer = "{amixer}"\n'
    daemon = build(write_config(tmp_path, mosquitto, extra), tmp_path / "reply.wav")
    sub = Subscriber(mosquitto)

    async def main():
        daemon.start()
        try:
            await asyncio.to_thread(wait_for, sub, f"sori/{node}/availability", "online")
            return await steps(daemon, sub)
        finally:
            await daemon.close()

    try:
        return asyncio.run(asyncio.wait_for(main(), 40)), state
    finally:
        sub.close()


def test_a_daemon_announces_itself_and_home_assistant_sets_its_volume(
    tmp_path, mosquitto, monkeypatch
):
    async def steps(daemon, sub):
        await daemon.on_heard(WakeDetected(daemon.clock.now_ns(), 1, "소리야", 0, 0, 1.0))
        await asyncio.to_thread(wait_for, sub, "sori/den/listening", "ON")
        turn = await daemon.say("거실 불 켜줘")
        await asyncio.to_thread(wait_for, sub, "sori/den/last_command", "거실 불 켜줘")
        await asyncio.to_thread(wait_for, sub, "sori/den/last_reply", turn["response"])
        await asyncio.to_thread(wait_for, sub, "sori/den/listening", "OFF")
        sub._client.publish("sori/den/volume/set", "30", qos=1)
        await asyncio.to_thread(wait_for, sub, "sori/den/volume", "30")

    _, state = on_a_discovery_daemon(tmp_path, mosquitto, monkeypatch, "den", steps)
    assert json.loads(state.read_text())["level"] == 30  # the speaker's own mixer was set
    assert retained(mosquitto, {"sori/den/availability"}) == {"sori/den/availability": "offline"}


def test_a_spoken_volume_change_is_the_volume_entitys_state(tmp_path, mosquitto, monkeypatch):
    async def steps(daemon, sub):
        await daemon.say("볼륨 50으로")
        await asyncio.to_thread(wait_for, sub, "sori/nook/volume", "50")
        await daemon.say("음소거")
        await asyncio.to_thread(wait_for, sub, "sori/nook/mute", "ON")
        return retained(mosquitto, {"sori/nook/volume", "sori/nook/mute"})

    seen, state = on_a_discovery_daemon(tmp_path, mosquitto, monkeypatch, "nook", steps)
    assert seen == {"sori/nook/volume": "50", "sori/nook/mute": "ON"}  # what HA reads on start
    assert json.loads(state.read_text())["level"] == 50


def test_the_mixer_read_at_start_never_overwrites_a_change_made_meanwhile(
    tmp_path, mosquitto, monkeypatch
):
    """At start the daemon reads the mixer to show Home Assistant its volume. A command
    heard before that read answers (a slow card, a busy board) is newer: the read, which
    saw 40, must not be published over the 50 the command set."""
    monkeypatch.setenv("FAKE_AMIXER_FIRST_SGET_S", "1.5")

    async def steps(daemon, sub):
        await daemon.say("볼륨 50으로")
        await asyncio.to_thread(wait_for, sub, "sori/slow/volume", "50")
        await asyncio.sleep(2.0)  # the start's read answers meanwhile
        return retained(mosquitto, {"sori/slow/volume", "sori/slow/mute"})

    seen, state = on_a_discovery_daemon(tmp_path, mosquitto, monkeypatch, "slow", steps)
    assert seen["sori/slow/volume"] == "50"
    assert seen["sori/slow/mute"] == "OFF"  # what the read saw, where nothing changed it
    assert json.loads(state.read_text())["level"] == 50


def test_the_speakers_mute_and_volume_are_shown_from_the_start(tmp_path, mosquitto, monkeypatch):
    """Home Assistant shows the mixer as it is (40 %, not muted) before any change, not
    "unknown"."""

    async def steps(daemon, sub):
        await asyncio.to_thread(wait_for, sub, "sori/hall/mute", "OFF")
        await asyncio.to_thread(wait_for, sub, "sori/hall/volume", "40")

    on_a_discovery_daemon(tmp_path, mosquitto, monkeypatch, "hall", steps)
