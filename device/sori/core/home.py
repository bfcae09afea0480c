"""The home: areas and devices the speaker can act on, and where the speaker stands.

Pure data. Filled from the config (`[home]`) or from Home Assistant test fixtures.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories no name, alias or id may hold: control characters (NUL, ESC, tab,
newlines), format characters (U+202E RIGHT-TO-LEFT OVERRIDE, zero-width ones), lone
surrogates and line separators. They hide or reorder what a name shows, turn one line of a
file or a log into several, and no one says them."""

MAX_NAME_CHARS = 64
"""Longest name or alias of an area or device, in characters. A spoken name is a few
words ("안방 천장 조명" is 7); a longer one is a pasted mistake or an attack, and every
name becomes a path in the matcher's tries."""


def unsafe_character(text: str) -> str | None:
    """The first character of `text` that no name may hold, in words ("U+202E
    RIGHT-TO-LEFT OVERRIDE"), or None when it has none."""
    for char in text:
        if unicodedata.category(char) in UNSAFE_CATEGORIES:
            name = unicodedata.name(char, "")
            return f"U+{ord(char):04X}" + (f" {name}" if name else "")
    return None


@dataclass(frozen=True, slots=True)
class Area:
    """A room or zone."""

    id: str
    """Stable identifier, e.g. "living_room"."""
    name: str
    """Canonical spoken name, e.g. "거실"."""
    aliases: tuple[str, ...] = ()
    """Other names people use for it."""

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, slots=True)
class Device:
    """Something that can be switched, set or asked about."""

    id: str
    """Entity id, e.g. "light.living_room"; its prefix is the default domain."""
    name: str
    """Canonical spoken name, e.g. "거실 조명"."""
    domain: str
    """Home Assistant domain: light, switch, climate, fan, cover, lock, media_player, ..."""
    area: str | None = None
    """Id of the area it stands in."""
    aliases: tuple[str, ...] = ()
    """Other names people use for it."""
    device_class: str | None = None
    """Home Assistant device class (curtain, blind, garage, outlet, ...)."""

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, slots=True)
class Home:
    """Everything the speaker knows about the home."""

    areas: tuple[Area, ...] = ()
    """Known areas."""
    devices: tuple[Device, ...] = ()
    """Known devices."""
    speaker_area: str | None = None
    """Id of the area the speaker stands in; "불 켜줘" means this room's lights."""
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Extra slot-list values by list name (e.g. fixture-only lists)."""

    def area(self, area_id: str | None) -> Area | None:
        return next((a for a in self.areas if a.id == area_id), None)

    def devices_in(self, area_id: str | None, domain: str | None = None) -> list[Device]:
        return [
            d
            for d in self.devices
            if (area_id is None or d.area == area_id) and (domain is None or d.domain == domain)
        ]
