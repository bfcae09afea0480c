"""Every intent Sori can commit is classed as a query, a command or neither, in one place."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import yaml

from sori.core.intent_kinds import COMMAND, KINDS, NOTHING, QUERY, is_command, kind_of
from sori.understanding.intents.loader import home_assistant_pack

PACKS = Path(__file__).resolve().parents[1] / "intents"


def pack_intents() -> set[str]:
    names = set()
    for path in PACKS.glob("*/*.yaml"):
        names |= set((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("intents", {}))
    return names


def home_assistant_intents() -> set[str]:
    """Every intent the Home Assistant intents project defines, in any language."""
    text = resources.files("home_assistant_intents").joinpath("intents.json").read_text()
    return set(json.loads(text))


def test_every_intent_of_sori_and_home_assistant_has_a_kind():
    korean = set(home_assistant_pack("ko")["intents"])
    unclassed = (pack_intents() | korean | home_assistant_intents()) - KINDS.keys()
    assert not unclassed, f"add these to sori.core.intent_kinds.KINDS: {sorted(unclassed)}"


def test_questions_never_act():
    for name in (
        "HassGetState", "HassClimateGetTemperature", "HassGetWeather", "HassGetCurrentTime",
        "HassGetCurrentDate", "HassTimerStatus",
    ):  # fmt: skip
        assert kind_of(name) == QUERY and not is_command(name)
    assert kind_of("HassNevermind") == NOTHING and not is_command("HassRespond")


def test_acting_intents_are_commands():
    for name in ("HassTurnOn", "HassTurnOff", "HassLightSet", "HassListCompleteItem"):
        assert kind_of(name) == COMMAND and is_command(name)


def test_unknown_intents_are_judged_by_their_name():
    assert kind_of("MyGetHumidity") == QUERY
    assert kind_of("VacuumStatus") == QUERY
    assert kind_of("HassListItems") == QUERY
    assert kind_of("MySceneActivate") == COMMAND
