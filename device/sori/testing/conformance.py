"""Home Assistant-format intent tests: load the cases and check them against presets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sori.core.errors import PackError
from sori.understanding.intents import Presets
from sori.understanding.intents.loader import read_yaml


@dataclass(frozen=True)
class Case:
    """One sentence with the intent and slots it must produce."""

    file: str
    sentence: str
    intent: str
    slots: dict[str, Any]


@dataclass(frozen=True)
class Failure:
    file: str
    sentence: str
    expected_intent: str
    expected_slots: dict[str, Any]
    got_intent: str | None
    got_slots: dict[str, Any]


@dataclass
class Result:
    passed: int = 0
    failures: list[Failure] = field(default_factory=list)


def load_cases(folder: Path) -> list[Case]:
    """Every case of the folder's test files; a PackError names the file and entry of any
    malformed one (the Home Assistant intents test format)."""
    cases = []
    for path in sorted(folder.glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        tests = read_yaml(path).get("tests") or []
        if not isinstance(tests, list):
            raise PackError(f"{path}: 'tests' must be a list of tests, got {_kind(tests)}")
        for i, test in enumerate(tests):
            cases.extend(_cases(path, i, test))
    return cases


def _cases(path: Path, i: int, test: Any) -> list[Case]:
    where = f"{path}: tests[{i}]"
    if not isinstance(test, dict):
        raise PackError(f"{where} must be a mapping with 'sentences' and 'intent'")
    sentences, intent = test.get("sentences"), test.get("intent")
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise PackError(f"{where}.sentences must be a list of sentences, got {_kind(sentences)}")
    if not isinstance(intent, dict) or not isinstance(intent.get("name"), str):
        raise PackError(f"{where}.intent must be a mapping with a 'name' (e.g. HassTurnOn)")
    slots = intent.get("slots") or {}
    if not isinstance(slots, dict):
        raise PackError(
            f"{where}.intent.slots must be a mapping of slot name to value, got {_kind(slots)}"
        )
    for name, value in slots.items():
        scalars = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str | int | float) for v in scalars):
            raise PackError(f"{where}.intent.slots.{name} must be text or a number")
    return [Case(path.name, s, intent["name"], slots) for s in sentences]


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "text"}.get(type(value), type(value).__name__)


def run_cases(cases: list[Case], presets: Presets) -> Result:
    result = Result()
    for case in cases:
        found = presets.match(case.sentence)
        got_intent = found.intent if found else None
        got_slots = found.slots if found else {}
        if got_intent == case.intent and slots_agree(case.slots, got_slots, presets):
            result.passed += 1
        else:
            result.failures.append(
                Failure(case.file, case.sentence, case.intent, case.slots, got_intent, got_slots)
            )
    return result


def slots_agree(expected: dict[str, Any], got: dict[str, Any], presets: Presets) -> bool:
    """Every expected slot is present with an equal value.

    Names and areas agree when the expected text is any name of the entity we resolved:
    we report canonical names where Home Assistant reports the alias that was spoken.
    """
    for name, want in expected.items():
        if name not in got:
            return False
        have = got[name]
        if _same(want, have):
            continue
        if name in ("name", "area") and _same_thing(name, str(want), str(have), presets):
            continue
        return False
    return True


def _same(want: Any, have: Any) -> bool:
    if isinstance(want, int | float) or isinstance(have, int | float):
        try:
            return float(want) == float(have)
        except (TypeError, ValueError):
            return False
    return str(want) == str(have)


def _same_thing(slot: str, want: str, have: str, presets: Presets) -> bool:
    things = presets.home.areas if slot == "area" else presets.home.devices
    return any(want in thing.names and have in thing.names for thing in things)
