"""The only place in `sori.understanding.intents` that reads files: sentence packs and HA
fixtures."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from sori.core.bounded_yaml import one_line, read_bounded
from sori.core.errors import PackError
from sori.core.home import MAX_NAME_CHARS, Area, Device, Home
from sori.core.shipped import shipped_path

MAX_DEPTH = 32
"""Mappings and lists one YAML file may nest (HA's packs and tests need a handful)."""
MAX_VALUES = 500_000
"""Values one YAML file may hold (the largest pack here holds about 2,000)."""


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping from `path`, or a PackError naming file, line and problem. Read within
    limits (no aliases, MAX_DEPTH levels, MAX_VALUES values): a pack or a test file comes
    from other people, and a few hundred bytes of YAML can otherwise fill the memory."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PackError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(f"{path}: cannot read as UTF-8 text: {exc}") from None
    try:
        data = read_bounded(text, MAX_DEPTH, MAX_VALUES)
    except yaml.YAMLError as exc:
        where, _, problem = one_line(exc, text).rpartition(": ")
        where = where.split(",")[0]  # "line 3, column 7" -> "line 3"
        if "nested more than" in problem:
            problem += " (nested too deeply: packs need a few levels)"
        raise PackError(f"{path}: {where + ': ' if where else ''}invalid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise PackError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


_ALTERNATIVES = re.compile(r"^\((.*)\)$")


def split_names(template: str) -> tuple[str, ...]:
    """ "(거실 조명|거실 등)" → ("거실 조명", "거실 등"); a plain name stays one name."""
    found = _ALTERNATIVES.match(template.strip())
    if not found:
        return (template.strip(),)
    names = [n.strip() for n in found.group(1).split("|") if n.strip()]
    return tuple(dict.fromkeys(names))


def load_fixtures(path: str | Path) -> Home:
    """A Home from Home Assistant's intent test fixtures (`areas`, `entities`, `context_area`)."""
    path = Path(path)
    data = read_yaml(path)
    areas = []
    for i, area in enumerate(_entries(data, "areas", path)):
        if not isinstance(area, dict) or "name" not in area or "id" not in area:
            raise PackError(f"{path}: areas[{i}] needs 'name' and 'id'")
        names = _names(area["name"], f"{path}: areas[{i}].name")
        areas.append(Area(str(area["id"]), names[0], names[1:]))
    devices = []
    for i, entity in enumerate(_entries(data, "entities", path)):
        if not isinstance(entity, dict) or "name" not in entity or "id" not in entity:
            raise PackError(f"{path}: entities[{i}] needs 'name' and 'id'")
        entity_id = str(entity["id"])
        names = _names(entity["name"], f"{path}: entities[{i}].name")
        attributes = entity.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise PackError(f"{path}: entities[{i}].attributes must be a mapping")
        area = entity.get("area")
        if area is not None and not isinstance(area, str):
            raise PackError(f"{path}: entities[{i}].area must be an area id (text)")
        devices.append(
            Device(
                id=entity_id,
                name=names[0],
                domain=entity_id.split(".", 1)[0],
                area=area,
                aliases=names[1:],
                device_class=attributes.get("device_class"),
            )
        )
    context_area = data.get("context_area")
    if context_area is not None and context_area not in {a.id for a in areas}:
        raise PackError(f"{path}: context_area {context_area!r} is not one of the areas' ids")
    return Home(tuple(areas), tuple(devices), context_area)


def _entries(data: dict[str, Any], key: str, path: Path) -> list[Any]:
    entries = data.get(key) or []
    if not isinstance(entries, list):
        raise PackError(f"{path}: '{key}' must be a list, got {type(entries).__name__}")
    return entries


_TEMPLATE_SYNTAX = re.compile(r"[()\[\]{}<>|]")


def _names(value: Any, where: str) -> tuple[str, ...]:
    """A fixture name's spoken names; template syntax left inside one is refused, since the
    names become words of the sentence templates."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise PackError(f"{where} must be text, got {type(value).__name__}")
    names = split_names(str(value))
    if not names or not names[0]:
        raise PackError(f"{where} = {value!r} names nothing; give a name like 거실")
    for name in names:
        if len(name) > MAX_NAME_CHARS:
            raise PackError(
                f"{where} is {len(name)} characters long; a name may have at most "
                f"{MAX_NAME_CHARS} characters: shorten it"
            )
        if _TEMPLATE_SYNTAX.search(name):
            raise PackError(
                f"{where} = {value!r}: {name!r} holds template syntax ( ) [ ] {{ }} < > |; "
                "give plain names, or alternatives as (name one|name two)"
            )
    return names


def builtin_packs_dir() -> Path:
    """Our own packs: `$SORI_INTENTS_DIR`, else the shipped ones (`intents/` in a checkout)."""
    override = os.environ.get("SORI_INTENTS_DIR")
    if override:
        return Path(override)
    return shipped_path("intents")


def pack_files(language: str, extra: Sequence[str | Path] = ()) -> list[Path]:
    """Built-in pack files for `language`, then the extra files or folders, in order."""
    files = sorted((builtin_packs_dir() / language).glob("*.yaml"))
    for item in extra:
        path = Path(item).expanduser()
        if path.is_dir():
            files.extend(sorted(path.glob("*.yaml")))
        elif path.is_file():
            files.append(path)
        else:
            raise PackError(f"{path}: pack file or folder not found (intents.packs)")
    return files


def read_pack(path: Path) -> tuple[dict[str, Any], Callable[[str], str]]:
    """A pack's dict and a function giving 'file:line' for a piece of its text."""
    data = read_yaml(path)
    lines = path.read_text(encoding="utf-8").splitlines()

    def locate(snippet: str) -> str:
        for number, line in enumerate(lines, 1):
            if snippet and snippet in line:
                return f"{path}:{number}"
        return str(path)

    return data, locate


def home_assistant_pack(language: str) -> dict[str, Any] | None:
    """Home Assistant's own sentence pack for `language`, if the package has one."""
    from home_assistant_intents import get_intents

    return get_intents(language)
