"""What a handler gets and gives back, and the protocol every handler implements."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from sori.core.errors import BackendError
from sori.core.home import Device


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
    deadline_ns: int = 0
    """`time.monotonic_ns()` after which nothing of this command may be sent, in
    nanoseconds; set by the registry from the commit. 0: the handler's own timeout."""
    payload_on: str = ""
    """Per-device MQTT body of "turn on" (home.devices[].payload_on); empty: the default."""
    payload_off: str = ""
    """Per-device MQTT body of "turn off"; empty: the default."""
    payload: dict[str, Any] = field(default_factory=dict)
    """Per-device MQTT body template (home.devices[].payload); empty: Sori's own JSON."""

    def remaining_s(self, default_s: float) -> float:
        """Seconds left before the deadline (never below 0); `default_s` when none is set."""
        if not self.deadline_ns:
            return default_s
        return max(0.0, (self.deadline_ns - time.monotonic_ns()) / 1e9)

    def with_deadline(self, default_s: float) -> Command:
        """This command with a deadline: its own, else `default_s` from now."""
        if self.deadline_ns:
            return self
        return replace(self, deadline_ns=time.monotonic_ns() + int(default_s * 1e9))

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


class NotConfirmed(BackendError):
    """The command was sent but its arrival was not confirmed by the deadline; it may or
    may not have been carried out. The speaker says so instead of claiming a failure."""


class Handler(Protocol):
    """Carries out commands. Raises BackendError (or anything) on failure, NotConfirmed when
    the command left but no confirmation came by `Command.deadline_ns`, after which it sends
    nothing more of that command."""

    name: str
    """Config name: "mqtt", "home_assistant", "webhook", "shell", "dry_run"."""

    async def handle(self, command: Command) -> Result: ...

    async def close(self) -> None: ...
