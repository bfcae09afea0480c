"""One device's state as read, and the protocol every state source implements."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from sori.core.home import Device


@dataclass(frozen=True, slots=True)
class Reading:
    """A device's state at the time it was read."""

    entity_id: str
    """Which device, e.g. "sensor.living_room_temperature"."""
    state: str
    """Its state as the source gives it: "on", "off", "open", "locked", "23.5", ..."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """Further values (Home Assistant's attributes, or the keys of a JSON state message):
    current_temperature, unit_of_measurement, ..."""
    source: str = ""
    """Which source answered: "mqtt" or "home_assistant"."""

    def number(self, *keys: str) -> float | None:
        """The first of `keys` among the attributes that is a number, else the state
        itself when it is one; None when there is none."""
        for value in [*(self.attributes.get(k) for k in keys), self.state]:
            try:
                if value not in (None, "", True, False):
                    return float(value)
            except (TypeError, ValueError):
                continue
        return None


def parse_payload(entity_id: str, payload: str, source: str) -> Reading:
    """A state message: plain ("ON", "23.5") or a JSON object whose "state" key (if any) is
    the state and whose other keys are attributes ({"state": "on", "current_temperature":
    23.5})."""
    text = payload.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            state = data.pop("state", "")
            return Reading(entity_id, "" if state is None else str(state), data, source)
    return Reading(entity_id, text, {}, source)


class StateSource(Protocol):
    """Reads devices' states; never sends anything that changes a device."""

    name: str
    """"mqtt", "home_assistant" or "routed"."""

    def covers(self, device: Device) -> bool:
        """Whether this source is where `device`'s state is read (else there is none)."""
        ...

    async def read(self, device: Device) -> Reading | None:
        """The device's state, or None when the source has no value for it. Raises
        BackendError when the source cannot be reached."""
        ...

    async def close(self) -> None: ...
