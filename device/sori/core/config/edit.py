"""Edit and write a sori.toml: set keys in place, keeping its comments and layout
(`sori models use`), and write a whole config (`sori setup`), checked first and replaced
atomically, its mode kept, a symlink followed, 0600 when it holds a secret."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sori.core.config import parse_config, parse_toml
from sori.core.errors import ConfigError
from sori.core.files import replace_file
from sori.core.redact import redact_data

_HEADER = re.compile(r"^\s*\[([A-Za-z0-9_.-]+)\]\s*(#.*)?$")


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: quotes, backslashes and every control character
    escaped, so that no string can end its quotes or its line."""
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif char < " " or char == "\x7f":
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def set_keys(path: Path, values: dict[str, str]) -> str:
    """The text of `path` with each dotted key (e.g. "stt.sherpa.model_dir") set to its
    string value: the line replaced where the key is already set in its table, else added
    under the table's header, else the table appended. Refuses dotted-key or inline-table
    spellings it cannot edit safely."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.splitlines()
    for dotted, value in values.items():
        table, _, key = dotted.rpartition(".")
        if not table:
            raise ConfigError(f"{dotted}: only keys inside a table can be set")
        line = f"{key} = {toml_string(value)}"
        lines = _set_one(lines, table, key, line, path)
    return "\n".join(lines) + "\n"


def replace_config(path: Path, text: str) -> Path:
    """Replace the config at `path` with `text` once it loads (ConfigError otherwise,
    nothing written). The file keeps its mode, a symlink stays and its target is written,
    and a config holding a secret (a password in a URL, an api_key) is made 0600. Returns
    the file written."""
    data = parse_toml(text, str(path))
    parse_config(data, source=str(path))
    try:
        return replace_file(path, text, private=holds_secret(data))
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def holds_secret(data: dict[str, Any]) -> bool:
    """Whether a parsed config holds anything redaction would hide: a key named like a
    secret (api_key, password, token) with a value, or credentials in a URL."""
    return redact_data(data) != data


def _set_one(lines: list[str], table: str, key: str, line: str, path: Path) -> list[str]:
    start = None
    for i, text in enumerate(lines):
        match = _HEADER.match(text)
        if match and match.group(1) == table:
            start = i
            break
    if start is None:
        if any(re.match(rf"^\s*{re.escape(table)}\s*=", t) for t in lines):
            raise ConfigError(f"{path}: {table} is an inline table; set {key} there by hand")
        return [*lines, "", f"[{table}]", line]
    end = next((j for j in range(start + 1, len(lines)) if _HEADER.match(lines[j])), len(lines))
    key_line = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for j in range(start + 1, end):
        if key_line.match(lines[j]):
            if lines[j].rstrip().endswith(("[", "{", '"""', "'''")):
                raise ConfigError(f"{path}: {table}.{key} spans lines; set it by hand")
            return [*lines[:j], line, *lines[j + 1 :]]
    return [*lines[: start + 1], line, *lines[start + 1 :]]
