from __future__ import annotations

import jsonschema
import pytest
from llm_data import VOCABULARY

from sori.thinking.schema import describe, intent_schema, parse_judgment, slot_schema


def valid(instance) -> bool:
    return jsonschema.Draft202012Validator(intent_schema(VOCABULARY)).is_valid(instance)


def test_known_intents_with_home_names_are_valid():
    assert valid({"intent": "HassTurnOn", "slots": {"name": "거실 조명", "area": "거실"}})
    assert valid({"intent": "HassLightSet", "slots": {"brightness": 40}})
    assert valid({"intent": "HassGetCurrentTime", "slots": {}})
    assert valid({"intent": "none", "needs": "reasoning"})
    assert valid({"intent": "none", "needs": "answer"})


@pytest.mark.parametrize(
    "instance",
    [
        {"intent": "HassTurnOn", "slots": {"name": "부엌 오븐"}},  # not a device of the home
        {"intent": "HassTurnOn", "slots": {"area": "차고"}},  # not an area of the home
        {"intent": "HassTurnOn", "slots": {"brightness": 10}},  # slot of another intent
        {"intent": "HassLightSet", "slots": {"brightness": 140}},  # out of range
        {"intent": "HassDance", "slots": {}},  # unknown intent
        {"intent": "none"},  # "none" must say what it needs
        {"intent": "none", "needs": "maybe"},
        {"intent": "HassStartTimer", "slots": {"name": "x" * 40}},  # free text is bounded
    ],
)
def test_everything_else_is_invalid(instance):
    assert not valid(instance)


def test_slot_types():
    assert slot_schema("area", VOCABULARY) == {"enum": ["거실", "안방", "주방"]}
    assert slot_schema("minutes", VOCABULARY)["type"] == "integer"
    assert slot_schema("item", VOCABULARY)["maxLength"] > 0


def test_describe_lists_intents_and_names():
    text = describe(VOCABULARY)
    assert "HassStartTimer(hours, minutes, seconds, name)" in text
    assert "안방 에어컨" in text


def test_parse_judgment():
    assert parse_judgment('{"intent": "HassTurnOn", "slots": {"area": "거실"}}') == (
        "HassTurnOn",
        {"area": "거실"},
        False,
    )
    assert parse_judgment('{"intent": "none", "needs": "reasoning"}') == (None, {}, True)
    assert parse_judgment('{"intent": "none", "needs": "answer"}') == (None, {}, False)
    with pytest.raises(ValueError):
        parse_judgment('{"intent": "none", "needs": "ans')
