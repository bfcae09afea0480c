"""Turn a parsed TOML table into a section dataclass, with errors that name the key."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from sori.errors import ConfigError


def build(cls: type, data: Any, path: str, source: str) -> Any:
    where = f"{source}: " if source else ""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}{path or 'config'} must be a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            options = ", ".join(sorted(known - {"source"}))
            raise ConfigError(f"{where}unknown key {_join(path, key)}; known keys: {options}")
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            values[f.name] = _coerce(hints[f.name], data[f.name], _join(path, f.name), source)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}missing key {_join(path, f.name)}")
    return cls(**values)


def _coerce(hint: Any, value: Any, path: str, source: str) -> Any:
    where = f"{source}: " if source else ""
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, path, source)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return None
        return _coerce(options[0], value, path, source)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{where}{path} must be a list, got {_kind(value)}")
        return [_coerce(item, v, f"{path}[{i}]", source) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}{path} must be a table, got {_kind(value)}")
        return dict(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}{path} must be a number, got {_kind(value)}")
        return float(value)
    if hint in (int, str, bool):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise ConfigError(f"{where}{path} must be {_NAMES[hint]}, got {_kind(value)}")
        return value
    return value


_NAMES = {int: "an integer", str: "a string", bool: "true or false"}


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
