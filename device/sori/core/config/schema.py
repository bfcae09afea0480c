"""Turn a parsed TOML table into a section dataclass, with errors that name the key.

A field's type is its schema; a numeric field also carries its allowed range in its
metadata (`ranged(default, low, high)`), and every float must be finite. Errors name the
key and what is allowed: "intents.fuzzy_threshold must be between 0 and 1, got nan".

`read_number` is the one check of every number Sori reads from a file: sori.toml here,
and `sori test` manifests (sori.testing.harness.manifest) with the same words.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from typing import Any

from sori.core.errors import ConfigError

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
    meta = limits(low, high, above=above, choices=choices)
    return dataclasses.field(default=default, metadata={"range": meta})


def limits(
    low: float | None = None,
    high: float | None = None,
    *,
    above: float | None = None,
    choices: tuple[Any, ...] = (),
) -> dict[str, Any]:
    """The allowed values `ranged` and `read_number` take (see `ranged`)."""
    return {"low": low, "high": high, "above": above, "choices": choices}


FINITE = limits()
"""The range of a number that declares none: any finite value."""


class NumberError(ValueError):
    """A number `read_number` refuses; the message says what is allowed ("must be between
    0 and 1, got nan") and the caller puts where the number stands in front of it."""


def read_number(value: Any, meta: dict[str, Any] = FINITE, *, integer: bool = False) -> float:
    """`value` as a finite number allowed by `meta`: a float, or an int when `integer`.
    Booleans are no numbers, and an int too big for a float is inf, so refused like nan
    (a nan passes every comparison, and downstream it hangs resamplers and spins timers)."""
    kinds = int if integer else int | float
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise NumberError(f"must be {'an integer' if integer else 'a number'}, got {_kind(value)}")
    number = value if integer else _float(value)
    if not in_range(meta, number):
        raise NumberError(f"must be {allowed(meta)}, got {shown(number)}")
    return number


def shown(value: Any) -> str:
    """`value` for a one-line error message: a number or text as written (text over 80
    characters cut, control characters escaped), anything else by its kind ("a list"). An
    int is shown by its size past 30 digits: Python refuses to print one over 4,300, and
    a TOML hex literal or a YAML one reads into such an int."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, str):
        return repr(value if len(value) <= 80 else value[:80] + "…")
    if isinstance(value, int | float):
        return repr(value)
    return _kind(value)


def long_number_error(text: str, where: str) -> ConfigError:
    """The error for TOML text holding a number of over 4,300 digits, which tomllib
    passes to Python's int(), which refuses it with a bare ValueError: the line, and the
    key when the line starts with one."""
    found = re.search(r"[0-9_]{4300,}", text)
    if found is None:  # tomllib raised ValueError for something else
        return ConfigError(f"{where}: not valid TOML: a value cannot be read")
    before = text[: found.start()]
    line = before.count("\n") + 1
    key = re.match(r"\s*([\w.\-\"' ]+?)\s*=", before[before.rfind("\n") + 1 :])
    table = re.findall(r"^[ \t]*\[\[?[ \t]*([^\]\n]+?)[ \t]*\]", before, re.MULTILINE)
    named = f"{dotted(table[-1] if table else '', key.group(1))} = " if key else ""
    digits = len(found.group().replace("_", ""))
    return ConfigError(
        f"{where}:{line}: {named}a number of {digits} digits; no setting needs more than a few"
    )


def allowed(meta: dict[str, Any]) -> str:
    """The allowed values of a ranged field, in words."""
    if meta["choices"]:
        *rest, last = ('""' if c == "" else str(c) for c in meta["choices"])
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
            raise ConfigError(f"{where}unknown key {dotted(path, key)}; known keys: {options}")
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            key = dotted(path, f.name)
            meta = f.metadata.get("range", FINITE)
            value = _coerce(hints[f.name], data[f.name], key, source, meta)
            if isinstance(value, str) and meta["choices"] and value not in meta["choices"]:
                raise ConfigError(f"{where}{key} must be {allowed(meta)}, got {shown(value)}")
            values[f.name] = value
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}missing key {dotted(path, f.name)}")
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


def _coerce(hint: Any, value: Any, path: str, source: str, meta: dict[str, Any] = FINITE) -> Any:
    """`value` checked against the type `hint` (and a number against `meta`)."""
    where = f"{source}: " if source else ""
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, path, source)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return None
        return _coerce(options[0], value, path, source, meta)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{where}{path} must be a list, got {_kind(value)}")
        return [_coerce(item, v, f"{path}[{i}]", source) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}{path} must be a table, got {_kind(value)}")
        _, item = typing.get_args(hint) or (str, Any)
        return {str(k): _coerce(item, v, dotted(path, str(k)), source) for k, v in value.items()}
    if hint in (int, float):
        try:
            return read_number(value, meta, integer=hint is int)
        except NumberError as exc:
            raise ConfigError(f"{where}{path} {exc}") from None
    if hint in (str, bool):
        if not isinstance(value, hint):
            raise ConfigError(f"{where}{path} must be {_NAMES[hint]}, got {_kind(value)}")
        return value
    return _free(value, path, source)


_JSON_INT = limits(-(2**53), 2**53)
"""Integers every JSON reader takes exactly (a double's 53-bit mantissa)."""


def _free(value: Any, path: str, source: str) -> Any:
    """A free-form value (`edge.extra_body`, `home.devices[].payload`), sent on as JSON:
    text, true/false, finite numbers JSON readers take, and lists and tables of them; not
    TOML's dates and times, which JSON has no form for."""
    where = f"{source}: " if source else ""
    if isinstance(value, dict):
        return {k: _free(v, dotted(path, k), source) for k, v in value.items()}
    if isinstance(value, list):
        return [_free(v, f"{path}[{i}]", source) for i, v in enumerate(value)]
    if isinstance(value, str | bool):
        return value
    if isinstance(value, int | float):
        try:
            if isinstance(value, int):
                return read_number(value, _JSON_INT, integer=True)
            return read_number(value)
        except NumberError as exc:
            raise ConfigError(f"{where}{path} {exc}") from None
    raise ConfigError(
        f"{where}{path} must be text, a number, true or false, a list or a table, "
        f"got {_kind(value)}"
    )


_NAMES = {str: "a string", bool: "true or false"}


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return math.inf if value > 0 else -math.inf


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def dotted(path: str, key: Any) -> str:
    """The dotted name of `key` under `path`, for messages: a key that is not plain text
    (a newline or another control character in it, or no text at all, as YAML allows) is
    quoted, so an error stays one line."""
    name = key if isinstance(key, str) and key.isprintable() else shown(key)
    return f"{path}.{name}" if path else name
