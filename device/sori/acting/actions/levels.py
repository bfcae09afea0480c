"""A step of brightness ("거실 불 밝게 해 줘", "조명 조금만 어둡게") made into a level.

Understanding says only which way ("up" or "down", or a signed percent from a follow-up)
in HassLightSet's `brightness_step`. Carrying it out, each light gets Home Assistant's own
HassLightSet `brightness`: the level the light is at, read through the configured state
source, plus the step, kept within 1-100 %. The step is `[conversation] brightness_step`
(20 %), half of it for "조금", "살짝" (`amount: little`).

- A light whose level the source does not know (no source, no message yet, a plain "ON")
  is taken to be at DEFAULT_LEVEL_PCT (50 %): "밝게" sets 70 %, "어둡게" 30 %.
- A light that is off is at 0 %: "밝게" turns it on at one step; "어둡게" leaves it off
  (nothing is sent) and the reply says so.
- Home Assistant reports `brightness` on 0-255; so does a device commanded through a
  `{brightness_255}` payload template (Zigbee2MQTT). Sori's own MQTT messages carry
  percent, as its commands do. A `brightness_pct` attribute is percent wherever it comes
  from.

The reply names the level set ("거실 조명 밝기를 70%로 올렸어요"). Pure functions, plus
one read of the state source (duck-typed: `covers(device)` and `async read(device)`; the
actions stage never imports the state stage).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from sori.core.hangul import has_final
from sori.core.home import Device

log = logging.getLogger(__name__)

DEFAULT_STEP_PCT = 20
"""A step, in percent, when none is configured (`[conversation] brightness_step`)."""
DEFAULT_LEVEL_PCT = 50
"""The level a light is taken to be at when no state source knows it, in percent."""
LITTLE = 0.5
""""조금 밝게" moves this share of a step."""
SCALE_255 = 255
"""Home Assistant's (and Zigbee2MQTT's) brightness scale."""


def is_step(intent: str, slots: Mapping[str, Any]) -> bool:
    """Whether a command is a brightness step still to be made into a level."""
    return intent == "HassLightSet" and "brightness_step" in slots and "brightness" not in slots


def step_percent(slots: Mapping[str, Any], step_pct: int = DEFAULT_STEP_PCT) -> int:
    """The signed step in percent: "up" / "down" (half a step when `amount` is "little"),
    or the signed percent a follow-up gave; 0 when it is none of these."""
    value = slots.get("brightness_step")
    scale = LITTLE if slots.get("amount") == "little" else 1.0
    if value in ("up", "down"):
        size = max(1, round(step_pct * scale))
        return size if value == "up" else -size
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def level_of(reading: Any, scale_255: bool = False) -> int | None:
    """A light's level in percent from a state reading: 0 when it is off, None when the
    reading says nothing of its level (or there is no reading)."""
    if reading is None:
        return None
    state = str(getattr(reading, "state", "")).strip().lower()
    if state == "off":
        return 0
    attributes = getattr(reading, "attributes", None) or {}
    percent = _number(attributes.get("brightness_pct"))
    if percent is not None:
        return _within(percent, 0)
    raw = _number(attributes.get("brightness"))
    if raw is None:
        return None
    if scale_255 or getattr(reading, "source", "") == "home_assistant":
        raw = raw * 100 / SCALE_255
    return _within(raw, 0)


def stepped(level: int | None, step: int) -> int | None:
    """The level after `step` from `level` (DEFAULT_LEVEL_PCT when unknown), within 1-100;
    None when a light that is off is asked to be darker (it stays off)."""
    if level == 0 and step < 0:
        return None
    start = DEFAULT_LEVEL_PCT if level is None else level
    return _within(start + step, 1)


async def read_levels(
    state: Any, devices: list[Device], timeout_s: float, scale_255: frozenset[str] = frozenset()
) -> dict[str, int | None]:
    """Each device's level in percent (see `level_of`), read at once from `state` within
    `timeout_s`; None for a device the source does not cover, cannot read or has no
    value for (the step then starts from DEFAULT_LEVEL_PCT)."""
    levels: dict[str, int | None] = {d.id: None for d in devices}
    covered = [d for d in devices if state is not None and state.covers(d)]
    if not covered:
        return levels
    try:
        readings = await asyncio.wait_for(
            asyncio.gather(*(state.read(d) for d in covered), return_exceptions=True),
            max(0.0, timeout_s),
        )
    except TimeoutError:
        log.warning("no brightness read within %.1f s; stepping from %d%%", timeout_s,
                    DEFAULT_LEVEL_PCT)  # fmt: skip
        return levels
    for device, reading in zip(covered, readings, strict=True):
        if isinstance(reading, BaseException):
            log.warning("reading %s's brightness failed: %s", device.id, reading)
            continue
        levels[device.id] = level_of(reading, device.id in scale_255)
    return levels


def said(language: str, names: list[str], levels: list[int | None], step: int) -> str:
    """The reply for a brightness step on the lights `names`, which now stand at `levels`
    (None: left off): "거실 조명 밝기를 70%로 올렸어요", "조명 3개 밝기를 20%씩 올렸어요"."""
    changed = [level for level in levels if level is not None]
    en = language == "en"
    if not changed:
        if en:
            return "The lights are off; I left them off." if len(names) > 1 else (
                f"The {names[0]} is off; I left it off.")  # fmt: skip
        if len(names) == 1:
            return f"{_topic(names[0])} 꺼져 있어서 그대로 뒀어요"
        return "조명이 꺼져 있어서 그대로 뒀어요"
    way_ko, way_en = ("올렸어요", "up") if step > 0 else ("내렸어요", "down")
    if len(names) == 1:
        if en:
            return f"Turned the {names[0]} {way_en} to {changed[0]}%."
        return f"{names[0]} 밝기를 {changed[0]}%로 {way_ko}"
    if len(set(changed)) == 1:
        if en:
            return f"Turned {len(changed)} lights {way_en} to {changed[0]}%."
        return f"조명 {len(changed)}개 밝기를 {changed[0]}%로 {way_ko}"
    if en:
        return f"Turned {len(changed)} lights {way_en} by {abs(step)}%."
    return f"조명 {len(changed)}개 밝기를 {abs(step)}%씩 {way_ko}"


def _topic(word: str) -> str:
    """`word` with 은/는."""
    return word + ("은" if word and has_final(word[-1]) else "는")


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _within(percent: float, low: int) -> int:
    return max(low, min(100, round(percent)))
