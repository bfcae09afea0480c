"""Client ids at the broker: speakers sharing one broker never take each other's
connection, whatever their config leaves out."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from broker import mosquitto  # noqa: F401
from sori.acting.mqtt_connection import client_id_for

SPEAKER = """
import asyncio, json, sys, time
from sori.acting.actions.base import Command
from sori.assemble.acting import build_handlers
from sori.core.config import parse_config
from sori.core.home import Device

config = parse_config({"actions": {"default_handler": "mqtt"}, "mqtt": {"url": sys.argv[1]}})

async def main():
    mqtt = build_handlers(config)["mqtt"]
    try:
        # both speakers are connected for these seconds, whoever came first
        time.sleep(3)
        lamp = Device("light." + sys.argv[2], "조명", "light", sys.argv[2])
        result = await mqtt.handle(Command("HassTurnOn", {}, lamp))
        return result.detail
    finally:
        await mqtt.close()

print(json.dumps(asyncio.run(main())))
"""


def test_an_empty_client_id_is_this_runs_own_and_each_client_of_the_run_has_its_own():
    run_id = client_id_for("")
    assert re.fullmatch(r"sori-[0-9A-Za-z]{1,11}-[0-9a-f]{6}", run_id)
    assert len(run_id) <= 23  # what every MQTT 3.1.1 broker must accept
    assert client_id_for("") == run_id  # one per run, not one per client
    assert client_id_for("", "state") == f"{run_id}-state"
    assert client_id_for("kitchen") == "kitchen"  # a configured id is kept as it is
    assert client_id_for("kitchen", "presence") == "kitchen-presence"
    other_run = subprocess.run(
        [sys.executable, "-c", "from sori.acting.mqtt_connection import client_id_for as c; "
         "print(c(''))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert re.fullmatch(r"sori-[0-9A-Za-z]{1,11}-[0-9a-f]{6}", other_run)
    assert other_run != run_id


def test_two_speakers_with_the_default_config_share_a_broker_without_dropping_each_other(
    mosquitto,  # noqa: F811
):
    rooms = ("living_room", "bedroom")
    speakers = [
        subprocess.Popen(
            [sys.executable, "-c", SPEAKER, mosquitto, room],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for room in rooms
    ]
    outputs = [speaker.communicate(timeout=60) for speaker in speakers]
    for room, speaker, (out, err) in zip(rooms, speakers, outputs, strict=True):
        assert speaker.returncode == 0, err
        # a broker that drops a client for another with its id makes it log this
        assert "disconnected" not in err, err
        assert json.loads(out) == f"sori/light/{room}/set ON"
