"""The devices that can answer a question: a temperature question asks climate devices and
temperature sensors (never a light), a state question the device it names, or the
devices of the domain in the area it names; a weather question the weather entities."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sori.core.home import Device, Home

TEMPERATURE_SENSOR_CLASS = "temperature"


def answering_devices(home: Home, intent: str, slots: Mapping[str, Any]) -> list[Device]:
    """Devices whose state answers `intent` with `slots`, best first; empty when none."""
    if intent == "HassClimateGetTemperature":
        return temperature_devices(home, slots)
    if intent == "HassGetWeather":
        return [d for d in home.devices if d.domain == "weather"]
    return state_devices(home, slots)


def temperature_devices(home: Home, slots: Mapping[str, Any]) -> list[Device]:
    """Temperature sensors, then climate devices: by name, else in the area (the speaker's
    when none is named), else anywhere in the home."""

    def measures(d: Device) -> bool:
        return d.domain == "climate" or (
            d.domain == "sensor" and d.device_class == TEMPERATURE_SENSOR_CLASS
        )

    name = slots.get("name")
    if name and name != "all":
        named = [d for d in home.devices if (name in d.names or name == d.id) and measures(d)]
        if named:
            return named
    area = _area_id(home, slots.get("area"))
    if slots.get("area") and area is None:
        return []
    found = [d for d in home.devices if measures(d) and d.area == (area or home.speaker_area)]
    if not found and not slots.get("area"):
        found = [d for d in home.devices if measures(d)]
    return sorted(found, key=lambda d: d.domain != "sensor")  # a sensor measures the room


def state_devices(home: Home, slots: Mapping[str, Any]) -> list[Device]:
    """The named device (in the named area when two share a name), else the devices of the
    domain (and device class) in the area."""
    domain = slots.get("domain") or None
    device_class = slots.get("device_class") or None
    area = _area_id(home, slots.get("area"))
    if slots.get("area") and area is None:
        return []
    name = slots.get("name")
    if name and name != "all":
        named = [d for d in home.devices if name in d.names or name == d.id]
        return [d for d in named if area is None or d.area == area] or named[:1]
    if not domain and area is None:
        return []
    found = [
        d
        for d in home.devices
        if (domain is None or d.domain == domain)
        and (device_class is None or d.device_class == device_class)
        and (area is None or d.area == area)
    ]
    return found


def _area_id(home: Home, value: Any) -> str | None:
    if not value:
        return None
    return next((a.id for a in home.areas if value in a.names or value == a.id), None)
