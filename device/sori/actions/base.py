"""What a handler gets and gives back, and the protocol every handler implements."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from sori.home import Device


@dataclass(frozen=True, slots=True)
class Command:
    """One intent to carry out on one device (or on the speaker itself)."""

    intent: str
    """Home Assistant intent name, e.g. "HassTurnOn"."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values from understanding."""
    device: Device | None = None
    """The target; None for intents the speaker handles itself."""
    topic: str = ""
    """Per-device MQTT topic override from the config."""
    text: str = ""
    """What the user said."""
    utterance_id: int = 0
    """Which utterance this came from."""

    @property
    def entity_id(self) -> str:
        return self.device.id if self.device else ""

    @property
    def domain(self) -> str:
        return self.device.domain if self.device else str(self.slots.get("domain", ""))

    @property
    def object_id(self) -> str:
        return self.entity_id.split(".", 1)[-1]

    def settings(self) -> dict[str, Any]:
        """Slots that carry a value to set (brightness, temperature, ...), not a target."""
        return {k: v for k, v in self.slots.items() if k not in TARGET_SLOTS}

    def payload_json(self) -> str:
        return json.dumps(
            {"intent": self.intent, "entity_id": self.entity_id, **self.settings()},
            ensure_ascii=False,
        )


TARGET_SLOTS = frozenset({"name", "area", "floor", "domain", "device_class"})
"""Slots that pick the device rather than say what to do with it."""


@dataclass(frozen=True, slots=True)
class Result:
    """What a handler did."""

    detail: str = ""
    """What was sent, for logs and the event stream."""
    speech: str = ""
    """A reply of the handler's own; empty keeps the preset's response."""


class Handler(Protocol):
    """Carries out commands. Raises BackendError (or anything) on failure."""

    name: str
    """Config name: "mqtt", "home_assistant", "webhook", "shell", "dry_run"."""

    async def handle(self, command: Command) -> Result: ...

    async def close(self) -> None: ...
