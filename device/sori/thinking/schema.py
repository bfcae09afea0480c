"""The JSON schema that constrains the local model when it maps a paraphrase onto an intent.

Generated from the known intents, their slots and the home's device and area names, so every
output is either a valid intent with valid slots or an explicit "none" that also carries the
model's judgment of whether the question needs the edge:

    {"intent": "HassTurnOn", "slots": {"name": "거실 조명"}}
    {"intent": "none", "needs": "reasoning"}        # or "answer": the local model can reply

Every string is bounded (enums or a `maxLength`) and every number has a range, so the
output has a bounded length too and cannot run away. Pure; standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

NONE = "none"
"""The intent value that means: no known intent; answer instead."""
NEEDS = ("answer", "reasoning")
"""Values of `needs` in a "none" judgment: the local model answers, or the edge must."""
FREE_TEXT_MAX_CHARS = 24
"""Bound on free-text slot values (timer names, list items) in the constrained output."""


@dataclass(frozen=True, slots=True)
class IntentSpec:
    """A known intent and the slots it takes."""

    name: str
    """Home Assistant intent name, e.g. "HassTurnOn"."""
    slots: tuple[str, ...] = ()
    """Slot names, e.g. ("name", "area")."""


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Everything the constrained output may mention."""

    intents: tuple[IntentSpec, ...] = ()
    """Known intents with their slots."""
    areas: tuple[str, ...] = ()
    """Canonical area names of the home."""
    devices: tuple[str, ...] = ()
    """Canonical device names of the home."""
    domains: tuple[str, ...] = ()
    """Device domains present in the home (light, climate, ...)."""
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """More closed value lists by slot name (e.g. "color")."""


def _int(lo: int, hi: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": lo, "maximum": hi}


_NUMERIC_SLOTS: dict[str, dict[str, Any]] = {
    "brightness": _int(0, 100),
    "position": _int(0, 100),
    "volume_level": _int(0, 100),
    "percentage": _int(0, 100),
    "temperature": _int(-30, 60),
    "hours": _int(0, 99),
    "minutes": _int(0, 999),
    "seconds": _int(0, 9999),
    "start_hours": _int(0, 99),
    "start_minutes": _int(0, 999),
    "start_seconds": _int(0, 9999),
}


def slot_schema(slot: str, vocab: Vocabulary) -> dict[str, Any]:
    """The schema of one slot's value."""
    closed = {"name": vocab.devices, "area": vocab.areas, "domain": vocab.domains}
    closed.update({k: v for k, v in vocab.extra.items() if v})
    if slot in closed:
        values = list(dict.fromkeys(closed[slot]))
        if values:
            return {"enum": values}
    if slot in _NUMERIC_SLOTS:
        return dict(_NUMERIC_SLOTS[slot])
    return {"type": "string", "maxLength": FREE_TEXT_MAX_CHARS}


def intent_schema(vocab: Vocabulary) -> dict[str, Any]:
    """The JSON schema every local judgment must satisfy."""
    branches: list[dict[str, Any]] = []
    for spec in vocab.intents:
        properties = {s: slot_schema(s, vocab) for s in dict.fromkeys(spec.slots)}
        branches.append(
            {
                "type": "object",
                "properties": {
                    "intent": {"const": spec.name},
                    "slots": {
                        "type": "object",
                        "properties": properties,
                        "additionalProperties": False,
                    },
                },
                "required": ["intent", "slots"],
                "additionalProperties": False,
            }
        )
    branches.append(
        {
            "type": "object",
            "properties": {"intent": {"const": NONE}, "needs": {"enum": list(NEEDS)}},
            "required": ["intent", "needs"],
            "additionalProperties": False,
        }
    )
    return {"anyOf": branches}


def describe(vocab: Vocabulary) -> str:
    """The vocabulary as prompt text: intents with slots, then the home's names."""
    lines = ["Intents (slots):"]
    lines += [f"- {s.name}({', '.join(s.slots)})" for s in vocab.intents]
    if vocab.areas:
        lines.append("Areas: " + ", ".join(vocab.areas))
    if vocab.devices:
        lines.append("Devices: " + ", ".join(vocab.devices))
    return "\n".join(lines)


def parse_judgment(raw: str) -> tuple[str | None, dict[str, Any], bool]:
    """(intent or None, slots, needs reasoning) from constrained output; ValueError if not JSON."""
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("intent"), str):
        raise ValueError(f"not a judgment: {raw[:80]!r}")
    if data["intent"] == NONE:
        return None, {}, data.get("needs") == "reasoning"
    slots = data.get("slots")
    return data["intent"], dict(slots) if isinstance(slots, dict) else {}, False
