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


RUN_ID = re.compile(r"sori-[0-9A-Za-z]{1,11}-[0-9a-f]{6}")

IDS_OF_A_FRESH_RUN = """
import multiprocessing
from sori.acting.mqtt_connection import client_id_for as c

def child(queue):
    queue.put(c(""))

if __name__ == "__main__":
    ids = [c(""), c(""), c("", "state"), c("", "state")]
    queue = multiprocessing.get_context("fork").Queue()
    forked = multiprocessing.get_context("fork").Process(target=child, args=(queue,))
    forked.start()
    print(" ".join([*ids, queue.get(timeout=30)]))
    forked.join(30)
"""


def test_an_empty_client_id_is_never_handed_out_twice():
    ids = subprocess.run(
        [sys.executable, "-c", IDS_OF_A_FRESH_RUN],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    first, second, state, second_state, forked = ids
    assert RUN_ID.fullmatch(first)
    assert len(first) <= 23  # what every MQTT 3.1.1 broker must accept
    # a second client of one kind in the run (daemons built side by side, as in tests)
    assert (second, state, second_state) == (f"{first}-2", f"{first}-state", f"{first}-state-2")
    assert RUN_ID.fullmatch(forked) and forked != first  # `sori test --jobs` workers
    ours = client_id_for("")
    assert RUN_ID.match(ours) and not ours.startswith(first)  # another run, another id


def test_a_configured_client_id_is_kept_as_it_is():
    # a broker's ACL may name it
    assert client_id_for("kitchen") == client_id_for("kitchen") == "kitchen"
    assert client_id_for("kitchen", "presence") == "kitchen-presence"


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
