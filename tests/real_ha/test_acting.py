"""Home Assistant as the home and the actions, through HA itself: `sori run` with
`[home] source = "home_assistant"` and `default_handler = "home_assistant"` turns HA's
template light (over an input_boolean, in the area 거실) on and off, and HA's state API
says so; an HA that refuses the token or cannot be reached gets the apology the docs
promise, and its entity is left as it was."""

from __future__ import annotations

import pytest
from ha_kit import free_port, wait_for
from sori_daemon import daemon_config, running

APOLOGY = "죄송해요, 기기를 제어하지 못했어요."
"""docs/acting-and-home-assistant.md, "Replies, deadlines and failures"."""


@pytest.fixture(scope="module")
def sori(real_ha, home, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sori-acting")
    section = f'[home]\nsource = "home_assistant"\narea = "{home["area"]}"\n'
    config = daemon_config(folder, real_ha.url, section, "thinking = false\n")
    with running(config, real_ha.token) as daemon:
        yield daemon


def test_a_spoken_command_turns_the_ha_light_on_and_off(real_ha, home, sori):
    real_ha.call("input_boolean", "turn_off", entity_id="input_boolean.living_light_power")
    wait_for(lambda: real_ha.state("light.living_light") == "off")

    turn = sori.say("거실 불 켜줘")
    assert turn["intent"] == "HassTurnOn" and turn["response"] == "거실 조명을 켰어요"
    assert [(a["target"], a["ok"]) for a in turn["actions"]] == [("light.living_light", True)]
    assert turn["actions"][0]["detail"] == "POST /api/services/light/turn_on 200"
    assert real_ha.state("light.living_light") == "on"  # carried out before the reply
    assert real_ha.state("input_boolean.living_light_power") == "on"

    turn = sori.say("거실 조명 꺼 줘")
    assert turn["intent"] == "HassTurnOff" and turn["response"] == "거실 조명을 껐어요"
    assert real_ha.state("light.living_light") == "off"
    assert real_ha.state("input_boolean.living_light_power") == "off"


def test_a_question_is_answered_from_ha_state_and_changes_nothing(real_ha, home, sori):
    real_ha.call("input_boolean", "turn_on", entity_id="input_boolean.living_light_power")
    wait_for(lambda: real_ha.state("light.living_light") == "on")
    turn = sori.say("거실 불 켜져 있어?")
    assert turn["intent"] == "HassGetState"
    assert turn["response"] == "네, 거실 조명은 켜져 있어요."
    assert turn["actions"] == []
    assert real_ha.state("light.living_light") == "on"


def test_an_entity_not_exposed_is_not_controlled(real_ha, home, sori):
    turn = sori.say("비밀 릴레이 켜줘")
    assert all(a["target"] != "switch.secret_relay" for a in turn["actions"])
    assert real_ha.state("switch.secret_relay") == "off"


FAILING_HOME = """[home]
area = "living_room"
areas = [{ id = "living_room", name = "거실" }]

[[home.devices]]
id = "light.living_light"
name = "거실 조명"
area = "living_room"
aliases = ["거실 불"]
"""


@pytest.mark.parametrize("fault", ["refused token", "unreachable"])
def test_a_failing_ha_gets_the_apology_and_nothing_changes(real_ha, fault, tmp_path):
    real_ha.call("input_boolean", "turn_off", entity_id="input_boolean.living_light_power")
    wait_for(lambda: real_ha.state("light.living_light") == "off")
    url = real_ha.url if fault == "refused token" else f"http://127.0.0.1:{free_port()}"
    token = "not-a-token" if fault == "refused token" else real_ha.token
    config = daemon_config(tmp_path, url, FAILING_HOME, "thinking = false\n")
    with running(config, token) as sori:
        turn = sori.say("거실 불 켜줘")
    assert turn["intent"] == "HassTurnOn"
    assert turn["response"] == APOLOGY
    assert [(a["target"], a["ok"]) for a in turn["actions"]] == [("light.living_light", False)]
    log = (tmp_path / "run.log").read_text()
    if fault == "refused token":
        assert "Home Assistant refused the token (401); renew it" in log
    else:
        assert "Home Assistant at http://127.0.0.1:" in log and "failed" in log
    assert "Traceback" not in log
    assert real_ha.state("light.living_light") == "off"
