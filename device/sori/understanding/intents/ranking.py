"""Choosing among readings: which candidate explains the utterance best, and when two
readings mean different things (so a fuzzy near-tie must be refused)."""

from __future__ import annotations

from sori.understanding.intents.matcher import Candidate


def rank(candidate: Candidate) -> tuple:
    """Higher is better: more of the utterance explained by literal text and known values."""
    # Hidden lists ({_light}) are our way of writing alternatives: they count as literal text.
    literal = candidate.terminal.literal_chars
    known = wild = reported = 0
    for capture in candidate.captures:
        span = capture.end - capture.start
        if capture.hidden:
            literal += span
        elif capture.kind == "wildcard":
            wild += span
        else:
            known += span
        reported += not capture.hidden
    named = any(c.slot == "name" for c in candidate.captures)
    return (
        literal + known - candidate.cost * 3,
        named,  # a device called by its own name is the most specific reading
        literal,
        -reported,
        -wild,
        candidate.terminal.block.priority,
        -candidate.skipped,
    )


def conflict(intent: str, slots: dict, other_intent: str, other_slots: dict) -> bool:
    """Whether two readings mean different things.

    "안방 조명" by name and "안방" lights by area (name: all) are one meaning; another
    intent, another area, another number are not.
    """
    if intent != other_intent:
        return True
    scopes = scope(slots), scope(other_slots)
    if None not in scopes and scopes[0] != scopes[1]:
        return True  # the living room's lights are not every light
    shared = slots.keys() & other_slots.keys()
    return any(
        slots[k] != other_slots[k] and "all" not in (slots[k], other_slots[k]) for k in shared
    )


def scope(slots: dict) -> str | None:
    """Where a reading acts: its area, or everywhere; None for one named device."""
    if slots.get("name") not in (None, "all"):
        return None
    return slots.get("area", "everywhere")
