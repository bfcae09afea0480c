"""The model catalog: every model Sori knows how to fetch, as data (models/catalog.toml)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sori.core.errors import ModelError
from sori.core.shipped import shipped_path

KINDS = ("stt", "vad", "wake", "tts", "llm")
BOARDS = ("pi4", "pi5", "jetson-orin-nano", "rk3588", "x86")
ARCHIVES = ("", "tar.bz2", "tar.gz", "zip")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
"""A sha256 digest as the catalog and the bundles write it."""
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""A model's name: one plain folder name, never a path."""
MAX_MB = 100_000
"""Largest size_mb or memory_mb (100 GB): a model's download limits are sized from it."""


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    """The upstream's own name; also the folder or file it installs as."""
    kind: str
    """One of KINDS."""
    languages: list[str]
    """Primary language tags ("*" for any)."""
    urls: list[str]
    """Upstream URLs of the download, tried in order."""
    archive: str
    """"tar.bz2", "tar.gz" or "zip"; "" for a single file."""
    size_mb: float
    """Download size in MB (10^6 bytes), as the upstream lists it."""
    sha256: str
    """Checksum of the download (64 hex digits); "" where none is verified."""
    verified: bool
    """Whether sha256 came from the upstream or a real download."""
    license: str
    """The licence (SPDX identifier where one exists)."""
    memory_mb: float
    """Resident memory when loaded, in MB (an estimate unless memory_measured)."""
    memory_measured: bool
    """Whether memory_mb was measured on a board."""
    boards: list[str]
    """Board profiles it suits (BOARDS)."""
    config: dict[str, str] = field(default_factory=dict)
    """Config keys `sori models use` writes; "{path}" becomes the installed path."""
    note: str = ""
    """One line for people."""
    answer_score: float = -1.0
    """A language model's share of the answerable Korean questions of
    `scripts/judge_local.py` it answered right, 0 to 1; -1: not judged. The router lets a
    model answer open questions only at `router.local_answer_floor` or above."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_catalog(path: str | Path | None = None) -> list[CatalogEntry]:
    """The catalog at `path` (default: the shipped one), checked field by field."""
    source = Path(path) if path else shipped_path("catalog.toml")
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"model catalog {source} not found; check --catalog") from None
    except OSError as exc:
        raise ModelError(f"model catalog {source} cannot be read: {exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"model catalog {source} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nesting level
        raise ModelError(f"model catalog {source} is nested too deeply to read") from None
    models = data.get("model", [])
    if not isinstance(models, list):
        raise ModelError(f"model catalog {source}: each model is a [[model]] table")
    entries = [_entry(item, f"{source}: model {i + 1}") for i, item in enumerate(models)]
    names = [e.name for e in entries]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ModelError(f"model catalog {source} names {', '.join(doubled)} more than once")
    return entries


def find_entry(entries: list[CatalogEntry], name: str) -> CatalogEntry:
    for entry in entries:
        if entry.name == name:
            return entry
    raise ModelError(f"no model {name!r} in the catalog; see `sori models list`")


def _entry(item: Any, where: str) -> CatalogEntry:
    if not isinstance(item, dict):
        raise ModelError(f"{where} must be a table")
    known = set(CatalogEntry.__dataclass_fields__)
    unknown = sorted(set(item) - known)
    if unknown:
        raise ModelError(f"{where}: unknown field {', '.join(unknown)}")
    required = known - {"config", "note", "answer_score"}
    missing = sorted(required - set(item))
    if missing:
        raise ModelError(f"{where}: missing {', '.join(missing)}")
    name = item["name"]
    if not isinstance(name, str) or not MODEL_NAME.fullmatch(name):
        raise ModelError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-'")
    where = f"{where} ({name})"
    checks = (
        (item["kind"] in KINDS, f"kind must be one of {', '.join(KINDS)}"),
        (_strings(item["languages"]) and item["languages"], "languages must list language tags"),
        (_strings(item["urls"]) and item["urls"], "urls must list at least one URL"),
        (
            _strings(item["urls"])
            and all(u.startswith(("https://", "http://")) for u in item["urls"]),
            "urls must be http(s)",
        ),
        (item["archive"] in ARCHIVES, f"archive must be one of {ARCHIVES}"),
        (_size(item["size_mb"]), f"size_mb must be a number above 0, at most {MAX_MB:g}"),
        (
            isinstance(item["sha256"], str)
            and (item["sha256"] == "" or SHA256_HEX.fullmatch(item["sha256"])),
            'sha256 must be 64 lowercase hex digits or ""',
        ),
        (isinstance(item["verified"], bool), "verified must be true or false"),
        (not item["verified"] or item["sha256"], "verified = true needs a sha256"),
        (isinstance(item["license"], str) and item["license"], "license must be named"),
        (_size(item["memory_mb"]), f"memory_mb must be a number above 0, at most {MAX_MB:g}"),
        (isinstance(item["memory_measured"], bool), "memory_measured must be true or false"),
        (
            _strings(item["boards"]) and set(item["boards"]) <= set(BOARDS),
            f"boards must be among {', '.join(BOARDS)}",
        ),
        (
            isinstance(item.get("config", {}), dict)
            and all(isinstance(v, str) for v in item.get("config", {}).values()),
            "config must map keys to strings",
        ),
        (_score(item.get("answer_score", -1.0)), "answer_score must be -1 or from 0 to 1"),
    )
    for ok, message in checks:
        if not ok:
            raise ModelError(f"{where}: {message}")
    return CatalogEntry(**item)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _size(value: Any) -> bool:
    """A size in MB the download limits can be sized from: finite, above 0, at most MAX_MB."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and 0 < value <= MAX_MB


def _score(value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and (value == -1 or 0 <= value <= 1)
