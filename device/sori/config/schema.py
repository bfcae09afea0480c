"""Turn a parsed TOML table into a section dataclass, with errors that name the key.

A field's type is its schema; a numeric field also carries its allowed range in its
metadata (`ranged(default, low, high)`), and every float must be finite. Errors name the
key and what is allowed: "intents.fuzzy_threshold must be between 0 and 1, got nan".
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any

from sori.errors import ConfigError

MAX_DEPTH = 16
"""Deepest nesting of tables and lists a config may have (sori.toml itself needs 4)."""


def ranged(
    default: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    above: float | None = None,
    choices: tuple[Any, ...] = (),
) -> Any:
    """A field with its allowed values: a number with `low <= x <= high` (either may be
    None) or `x > above`, or any value among `choices`. `schema.build` checks them."""
    meta = {"low": low, "high": high, "above": above, "choices": choices}
    return dataclasses.field(default=default, metadata={"range": meta})


def allowed(meta: dict[str, Any]) -> str:
    """The allowed values of a ranged field, in words."""
    if meta["choices"]:
        *rest, last = (str(c) for c in meta["choices"])
        return f"{', '.join(rest)} or {last}" if rest else last
    low, high, above = meta["low"], meta["high"], meta["above"]
    if above is not None:
        return f"above {above}" + (f" and at most {high}" if high is not None else "")
    if low is not None and high is not None:
        return f"between {low} and {high}"
    if low is not None:
        return f"at least {low}"
    if high is not None:
        return f"at most {high}"
    return "a finite number"


def in_range(meta: dict[str, Any], value: float) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if meta["choices"]:
        return value in meta["choices"]
    if meta["above"] is not None and not value > meta["above"]:
        return False
    if meta["low"] is not None and not value >= meta["low"]:
        return False
    return meta["high"] is None or value <= meta["high"]


def build(cls: type, data: Any, path: str, source: str) -> Any:
    where = f"{source}: " if source else ""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}{path or 'config'} must be a table, got {_kind(data)}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            options = ", ".join(sorted(known - {"source"}))
            raise ConfigError(f"{where}unknown key {_join(path, key)}; known keys: {options}")
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            key = _join(path, f.name)
            value = _coerce(hints[f.name], data[f.name], key, source)
            meta = f.metadata.get("range", _FINITE)
            if (_is_number(value) or meta["choices"]) and not in_range(meta, value):
                raise ConfigError(f"{where}{key} must be {allowed(meta)}, got {value!r}")
            values[f.name] = value
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}missing key {_join(path, f.name)}")
    return cls(**values)


def check_depth(data: Any, source: str, limit: int = MAX_DEPTH) -> None:
    """Refuse nesting deeper than `limit` (walked without recursion, so any depth is safe)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            where = f"{source}: " if source else ""
            raise ConfigError(
                f"{where}tables and lists are nested more than {limit} deep; "
                "sori.toml needs no more than 4 (see sori.example.toml)"
            )
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


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
        _, item = typing.get_args(hint) or (str, Any)
        return {str(k): _coerce(item, v, _join(path, str(k)), source) for k, v in value.items()}
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}{path} must be a number, got {_kind(value)}")
        try:
            return float(value)
        except OverflowError:  # an integer too large for a float
            return math.inf
    if hint in (int, str, bool):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise ConfigError(f"{where}{path} must be {_NAMES[hint]}, got {_kind(value)}")
        return value
    return value


_FINITE = {"low": None, "high": None, "above": None, "choices": ()}
"""The range of a number field that declares none: any finite value."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_NAMES = {int: "an integer", str: "a string", bool: "true or false"}


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
