"""Home Assistant's registries as sori.toml's [home] tables: areas with their aliases (and
their floor's names as more aliases), and each entity exposed to Assist as a device with
id = entity_id, its name, area, aliases and domain. Names stay as HA has them (Korean)."""

from __future__ import annotations

import json
from typing import Any

from sori.errors import BackendError
from sori.ha_import.client import Registries, assist_exposed


def _names(values: Any) -> list[str]:
    """Aliases as a clean list of strings (HA sends a list; older versions a set-like)."""
    if not isinstance(values, (list, tuple)):
        return []
    return sorted({v.strip() for v in values if isinstance(v, str) and v.strip()})


def home_tables(found: Registries) -> dict[str, Any]:
    """{"areas": [...], "devices": [...]} in sori.toml's shapes; only exposed entities."""
    try:
        floors = {f["floor_id"]: f for f in found.floors}
        areas = []
        for a in found.areas:
            area = {
                "id": str(a["area_id"]),
                "name": str(a["name"]),
                "aliases": _names(a.get("aliases")),
            }
            floor = floors.get(a.get("floor_id"))
            if floor:
                area["floor"] = str(floor["name"])
            areas.append(area)
        devices_by_id = {d["id"]: d for d in found.devices}
        friendly = {
            s["entity_id"]: (s.get("attributes") or {}).get("friendly_name")
            for s in found.states
            if isinstance(s, dict) and "entity_id" in s
        }
        exposed = assist_exposed(found.exposed)
        area_ids = {a["id"] for a in areas}
        devices = []
        for e in found.entities:
            entity_id = e["entity_id"]
            if entity_id not in exposed or e.get("disabled_by"):
                continue
            device = devices_by_id.get(e.get("device_id")) or {}
            area = e.get("area_id") or device.get("area_id") or ""
            entry = {
                "id": entity_id,
                "name": entity_name(e, device, friendly.get(entity_id)),
                "domain": entity_id.split(".", 1)[0],
                "area": area if area in area_ids else "",
                "aliases": _names(e.get("aliases")),
            }
            device_class = e.get("device_class") or e.get("original_device_class")
            if device_class:
                entry["device_class"] = str(device_class)
            devices.append(entry)
    except (KeyError, TypeError, AttributeError) as exc:
        raise BackendError(
            f"Home Assistant's registries are not in the shape expected ({type(exc).__name__}: "
            f"{exc}); is this a Home Assistant websocket API?"
        ) from None
    return {"areas": areas, "devices": sorted(devices, key=lambda d: d["id"])}


def entity_name(entity: dict[str, Any], device: dict[str, Any], friendly: Any) -> str:
    """The name HA shows: the entity's own name, else its friendly name, else the device's
    name with the entity's original name, else the entity id's object id."""
    if entity.get("name"):
        return str(entity["name"])
    if isinstance(friendly, str) and friendly.strip():
        return friendly.strip()
    device_name = device.get("name_by_user") or device.get("name") or ""
    original = entity.get("original_name") or ""
    if entity.get("has_entity_name") and device_name:
        return f"{device_name} {original}".strip()
    return str(original or device_name or entity["entity_id"].split(".", 1)[1])


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def home_toml(tables: dict[str, Any], source_url: str = "") -> str:
    """The [home] section for `tables`, ready to paste into (or be) sori.toml."""
    lines = [
        f"# Imported from Home Assistant{' at ' + source_url if source_url else ''} by "
        "`sori home import`: areas, and the entities exposed to Assist.",
        "[home]",
        '# area = "living_room"  # the room the speaker stands in: set it (an id below)',
    ]
    for area in tables["areas"]:
        lines += ["", "[[home.areas]]", f"id = {_q(area['id'])}", f"name = {_q(area['name'])}"]
        if area["aliases"]:
            lines.append(f"aliases = [{', '.join(_q(a) for a in area['aliases'])}]")
        if area.get("floor"):
            lines[-1] += f"  # floor: {area['floor']}"
    for device in tables["devices"]:
        lines += [
            "",
            "[[home.devices]]",
            f"id = {_q(device['id'])}",
            f"name = {_q(device['name'])}",
            f"domain = {_q(device['domain'])}",
        ]
        if device["area"]:
            lines.append(f"area = {_q(device['area'])}")
        if device["aliases"]:
            lines.append(f"aliases = [{', '.join(_q(a) for a in device['aliases'])}]")
        if device.get("device_class"):
            lines.append(f"device_class = {_q(device['device_class'])}")
    return "\n".join(lines) + "\n"
