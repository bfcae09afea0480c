"""Home Assistant's registries as sori.toml's [home] tables: areas with their aliases (and
their floor's name, as a comment), and each entity exposed to Assist as a device with
id = entity_id, its name, area, aliases and domain. Names stay as HA has them (Korean).

Nothing HA sends is trusted: each record must be an object, each name a string without
control or format characters (a newline in a floor name must never become a table of
sori.toml), each exposed entity id HA's `domain.object_id`. Anything else is a
BackendError that says where, never a traceback. `home_toml` quotes every string it
writes, comments included."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from sori.core.config.edit import toml_string
from sori.core.errors import BackendError
from sori.core.home import unsafe_character
from sori.provisioning.ha_import.client import Registries, assist_exposed

ENTITY_ID = re.compile(r"[a-z0-9_]+\.[a-z0-9_]+")
"""HA's entity ids: domain.object_id, in lowercase letters, digits and underscores."""


def home_tables(found: Registries) -> dict[str, Any]:
    """{"areas": [...], "devices": [...]} in sori.toml's shapes; only exposed entities."""
    floors = {
        _text(floor, "floor_id", where, required=True): _text(floor, "name", where)
        for where, floor in _records(found.floors, "floor_registry")
    }
    areas = []
    for where, record in _records(found.areas, "area_registry"):
        area = {
            "id": _text(record, "area_id", where, required=True),
            "name": _text(record, "name", where, required=True),
            "aliases": _aliases(record, where),
        }
        floor = floors.get(_text(record, "floor_id", where))
        if floor:
            area["floor"] = floor
        areas.append(area)
    devices_by_id = {
        _text(device, "id", where, required=True): (where, device)
        for where, device in _records(found.devices, "device_registry")
    }
    exposed = assist_exposed(found.exposed)
    friendly = {}
    for where, state in _records(found.states, "get_states"):
        entity_id = _text(state, "entity_id", where, required=True)
        if entity_id in exposed:
            attributes = state.get("attributes") or {}
            if not isinstance(attributes, dict):
                raise _shape(f"{where}.attributes is {_kind(attributes)}, not an object")
            friendly[entity_id] = _text(attributes, "friendly_name", f"{where}.attributes")
    area_ids = {a["id"] for a in areas}
    devices = []
    for where, entity in _records(found.entities, "entity_registry"):
        entity_id = _text(entity, "entity_id", where, required=True)
        if entity_id not in exposed or entity.get("disabled_by"):
            continue
        if not ENTITY_ID.fullmatch(entity_id):
            raise _shape(f"{where}.entity_id = {entity_id!r} is not an entity id (light.x)")
        extended = found.entries.get(entity_id)
        if isinstance(extended, dict):  # the extended entry, where the aliases are
            entity = {**entity, **extended}
        device_where, device = devices_by_id.get(_text(entity, "device_id", where), ("", {}))
        area = _text(entity, "area_id", where) or _text(device, "area_id", device_where)
        entry = {
            "id": entity_id,
            "name": _entity_name(entity, where, device, device_where, friendly.get(entity_id)),
            "domain": entity_id.split(".", 1)[0],
            "area": area if area in area_ids else "",
            "aliases": _aliases(entity, where),
        }
        device_class = _text(entity, "device_class", where) or _text(
            entity, "original_device_class", where
        )
        if device_class:
            entry["device_class"] = device_class
        devices.append(entry)
    return {"areas": areas, "devices": sorted(devices, key=lambda d: d["id"])}


def _entity_name(
    entity: dict[str, Any],
    where: str,
    device: dict[str, Any],
    device_where: str,
    friendly: str | None,
) -> str:
    """The name HA shows: the entity's own name, else its friendly name, else the device's
    name with the entity's original name, else the entity id's object id."""
    own = _text(entity, "name", where)
    if own:
        return own
    if friendly:
        return friendly
    device_name = _text(device, "name_by_user", device_where) or _text(device, "name", device_where)
    original = _text(entity, "original_name", where)
    if entity.get("has_entity_name") and device_name:
        return f"{device_name} {original}".strip()
    return original or device_name or entity["entity_id"].split(".", 1)[1]


def _records(values: Any, registry: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) for each record of a registry: a list of objects."""
    if not isinstance(values, list):
        raise _shape(f"{registry} is {_kind(values)}, not a list")
    for i, record in enumerate(values):
        where = f"{registry}[{i}]"
        if not isinstance(record, dict):
            raise _shape(f"{where} is {_kind(record)}, not an object")
        yield where, record


def _text(record: dict[str, Any], key: str, where: str, *, required: bool = False) -> str:
    """record[key] as a clean name ("" when absent or null, unless `required`)."""
    value = record.get(key)
    if value is None and not required:
        return ""
    name = _name(value, f"{where}.{key}")
    if required and not name:
        raise _shape(f"{where}.{key} is missing or empty")
    return name


def _aliases(record: dict[str, Any], where: str) -> list[str]:
    """record["aliases"] as a sorted list of clean names (HA sends a list, or null)."""
    values = record.get("aliases")
    if values is None:
        return []
    if not isinstance(values, list):
        raise _shape(f"{where}.aliases is {_kind(values)}, not a list")
    names = {_name(value, f"{where}.aliases[{i}]") for i, value in enumerate(values)}
    return sorted(names - {""})


def _name(value: Any, where: str) -> str:
    """A string without control or format characters, stripped."""
    if not isinstance(value, str):
        raise _shape(f"{where} is {_kind(value)}, not a string")
    bad = unsafe_character(value)
    if bad:
        raise BackendError(
            f"Home Assistant's {where} = {value!r} holds {bad}, a control or format "
            "character; rename it in Home Assistant"
        )
    return value.strip()


def _shape(detail: str) -> BackendError:
    return BackendError(
        f"Home Assistant's registries are not in the shape expected: {detail}; is this a "
        "Home Assistant websocket API?"
    )


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _strings(values: list[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


def home_toml(tables: dict[str, Any], source_url: str = "") -> str:
    """The [home] section for `tables`, ready to paste into (or be) sori.toml."""
    where = f" at {toml_string(source_url)}" if source_url else ""
    lines = [
        f"# Imported from Home Assistant{where} by `sori home import`: areas, and the "
        "entities exposed to Assist.",
        "[home]",
        '# area = "living_room"  # the room the speaker stands in: set it (an id below)',
    ]
    for area in tables["areas"]:
        lines += [
            "",
            "[[home.areas]]",
            f"id = {toml_string(area['id'])}",
            f"name = {toml_string(area['name'])}",
        ]
        if area["aliases"]:
            lines.append(f"aliases = {_strings(area['aliases'])}")
        if area.get("floor"):
            lines[-1] += f"  # floor: {toml_string(area['floor'])}"
    for device in tables["devices"]:
        lines += [
            "",
            "[[home.devices]]",
            f"id = {toml_string(device['id'])}",
            f"name = {toml_string(device['name'])}",
            f"domain = {toml_string(device['domain'])}",
        ]
        if device["area"]:
            lines.append(f"area = {toml_string(device['area'])}")
        if device["aliases"]:
            lines.append(f"aliases = {_strings(device['aliases'])}")
        if device.get("device_class"):
            lines.append(f"device_class = {toml_string(device['device_class'])}")
    return "\n".join(lines) + "\n"
