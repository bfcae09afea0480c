"""What a bundle holds and where: the manifest (JSON) that lists every member with its
sha256 and size, and SHA256SUMS beside it for `sha256sum -c` on a device before anything
runs.

    manifest.json       this Manifest (the tar's first member)
    SHA256SUMS          sha256sum's format, every member but itself
    wheels/*.whl        the sori wheel and its dependencies for the target platform
    models/NAME[/...]   each model as installed in the local store, with its
                        .sori-manifest.json
    config/sori.toml    the board profile's config (model paths are set at install)

A bundle comes from another machine, so the manifest is checked whole before any member is
unpacked: every field's type, every member path (relative, no "..", under one of the folders
above), every model name (one plain folder name), and that the wheels and models it lists
are exactly the members it checksums.
"""

from __future__ import annotations

import json
import re
import reprlib
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from sori.core.errors import BundleError
from sori.provisioning.models.catalog import KINDS, MODEL_NAME, SHA256_HEX
from sori.provisioning.models.store import MANIFEST as MODEL_MANIFEST

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
WHEELS = "wheels"
MODELS = "models"
CONFIG = "config/sori.toml"
FORMAT = 2
"""Manifest format; a reader refuses any other. 2: members' sizes are listed."""
MANIFEST_MAX_BYTES = 4 << 20
"""Largest manifest.json (or SHA256SUMS) read: a few thousand members fit in far less."""
CONFIG_MAX_BYTES = 1 << 20
"""Largest config/sori.toml: it is read whole to set the model paths."""
MEMBER_MAX_BYTES = 64 << 30
"""Largest member, whatever the manifest says: an LLM for a board is a few GB."""
NAME_MAX_CHARS = 200
"""Longest model name: it becomes a folder name, with a manifest suffix beside it."""
_TEXT_MAX_CHARS = 1000
_PATH_MAX_CHARS = 1024
_COMPONENT_MAX_BYTES = 255
_CONFIG_KEY = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+")
REMAKE = "nothing was installed; copy the bundle again or make a new one with `sori bundle`"


@dataclass(frozen=True)
class SourceOnly:
    requirement: str
    """The requirement as sori's metadata gives it (e.g. "llama-cpp-python>=0.3")."""
    package: str
    """The package that has no wheel for the platform (may be a dependency of it)."""
    build: str
    """What the device needs to build it from source."""


@dataclass(frozen=True)
class BundledModel:
    name: str
    """Catalog name; the folder or file it installs as."""
    kind: str
    """Catalog kind (stt, vad, wake, tts, llm)."""
    config: dict[str, str] = field(default_factory=dict)
    """Config keys set at install; "{path}" becomes the installed path."""


@dataclass(frozen=True)
class Manifest:
    sori_version: str
    """Version of the sori wheel inside."""
    board: str
    """Board profile the bundle was made for."""
    platforms: list[str]
    """pip platform tags the wheels were chosen for."""
    python_version: str
    """Target Python (major.minor)."""
    extras: list[str]
    """sori extras whose dependencies are packed."""
    wheels: list[str]
    """Wheel file names under wheels/."""
    source_only: list[SourceOnly]
    """Requirements with no wheel for the platform: the device must build them."""
    models: list[BundledModel]
    """Models under models/."""
    files: dict[str, str]
    """Every other member's path -> sha256 (hex)."""
    sizes: dict[str, int]
    """Every member in `files` -> its size in bytes, checked against the tar's header before
    the member is unpacked."""
    format: int = FORMAT
    """Manifest format version."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> Manifest:
        """The manifest in `text`, checked whole; BundleError naming the first problem."""
        try:
            data = json.loads(text)
        except RecursionError:
            raise _bad(where, "nests too deeply to be a bundle manifest") from None
        except ValueError as exc:
            raise _bad(where, f"is not JSON ({exc})") from None
        return _manifest(data, where)


def sums_text(files: dict[str, str]) -> str:
    """SHA256SUMS in sha256sum's format."""
    return "".join(f"{digest}  {path}\n" for path, digest in sorted(files.items()))


def _bad(where: str, problem: str) -> BundleError:
    return BundleError(f"{where}: {MANIFEST} {problem}; {REMAKE}")


def _shown(value: Any) -> str:
    """A value for a message: short, one line, escapes visible, however deep or long."""
    return reprlib.repr(value)


def _manifest(data: Any, where: str) -> Manifest:
    data = _mapping(data, "as a whole", where)
    version = data.get("format")
    if _is_int(version) and version > FORMAT:
        raise BundleError(
            f"{where}: bundle format {version} is newer than this sori reads ({FORMAT}); "
            "install it with the sori version that made it"
        )
    if version != FORMAT:
        raise _bad(where, f"format {_shown(version)} is not {FORMAT} (bundles before format 2 "
                   "list no member sizes)")  # fmt: skip
    wanted = {f.name for f in fields(Manifest)}
    unknown, missing = sorted(set(data) - wanted), sorted(wanted - set(data))
    if unknown or missing:
        problem = f"has unknown fields {_shown(unknown)}" if unknown else ""
        problem += " and " if unknown and missing else ""
        problem += f"lacks {', '.join(missing)}" if missing else ""
        raise _bad(where, problem)
    files = _files(data["files"], where)
    sizes = _sizes(data["sizes"], files, where)
    models = [
        _model(item, i, where) for i, item in enumerate(_list(data["models"], "models", where))
    ]
    manifest = Manifest(
        sori_version=_text(data["sori_version"], "sori_version", where),
        board=_text(data["board"], "board", where),
        platforms=_texts(data["platforms"], "platforms", where),
        python_version=_text(data["python_version"], "python_version", where),
        extras=_texts(data["extras"], "extras", where),
        wheels=_wheels(data["wheels"], files, where),
        source_only=[_source_only(item, i, where)
                     for i, item in enumerate(_list(data["source_only"], "source_only", where))],
        models=models,
        files=files,
        sizes=sizes,
    )  # fmt: skip
    _check_models_own_their_members(models, files, where)
    return manifest


def _files(value: Any, where: str) -> dict[str, str]:
    files = _mapping(value, "files", where)
    for path, digest in files.items():
        _member_path(path, where)
        if not isinstance(digest, str) or not SHA256_HEX.fullmatch(digest):
            raise _bad(where, f"files[{_shown(path)}] must be a sha256 (64 lowercase hex digits)")
    if CONFIG not in files:
        raise _bad(where, f"lists no {CONFIG}")
    # A path that is also another's folder could not be unpacked as both.
    folders = {path.rsplit("/", i)[0] for path in files for i in range(1, path.count("/") + 1)}
    clash = sorted(folders & set(files))
    if clash:
        raise _bad(where, f"lists {_shown(clash[0])} both as a file and as a folder")
    return files


def _member_path(path: str, where: str) -> None:
    """A member's path: relative, no "." or ".." or empty parts, printable, under wheels/
    (one level), models/ or exactly the config."""
    parts = path.split("/")
    plain = (
        len(path) <= _PATH_MAX_CHARS
        and path.isprintable()
        and all(p not in ("", ".", "..") for p in parts)
        and all(len(p.encode()) <= _COMPONENT_MAX_BYTES for p in parts)
    )
    placed = (
        path == CONFIG
        or (parts[0] == WHEELS and len(parts) == 2)
        or (parts[0] == MODELS and len(parts) >= 2)
    )
    if not (plain and placed):
        raise _bad(where, f"names the member {_shown(path)}, which is not a relative path "
                   f"under {WHEELS}/, {MODELS}/ or {CONFIG}")  # fmt: skip


def _sizes(value: Any, files: dict[str, str], where: str) -> dict[str, int]:
    sizes = _mapping(value, "sizes", where)
    if set(sizes) != set(files):
        odd = sorted(set(sizes) ^ set(files))
        raise _bad(where, f"sizes and files list different members ({_shown(odd)})")
    for path, size in sizes.items():
        limit = CONFIG_MAX_BYTES if path == CONFIG else MEMBER_MAX_BYTES
        if not _is_int(size) or not 0 <= size <= limit:
            raise _bad(where, f"sizes[{_shown(path)}] must be a whole number of bytes, 0 to "
                       f"{limit}")  # fmt: skip
    return sizes


def _wheels(value: Any, files: dict[str, str], where: str) -> list[str]:
    """The wheels pip installs: exactly the checksummed members under wheels/."""
    wheels = _texts(value, "wheels", where)
    packed = sorted(p.split("/", 1)[1] for p in files if p.startswith(f"{WHEELS}/"))
    if sorted(wheels) != packed or not all(w.endswith(".whl") for w in wheels):
        raise _bad(where, f"wheels {_shown(wheels)} are not the .whl members it checksums "
                   f"({_shown(packed)})")  # fmt: skip
    return wheels


def _model(item: Any, index: int, where: str) -> BundledModel:
    what = f"models[{index}]"
    item = _mapping(item, what, where)
    if set(item) - {"name", "kind", "config"} or not {"name", "kind"} <= set(item):
        raise _bad(where, f"{what} must have name, kind and config, not {_shown(sorted(item))}")
    name = item["name"]
    if not (isinstance(name, str) and len(name) <= NAME_MAX_CHARS and MODEL_NAME.fullmatch(name)):
        raise _bad(where, f"{what} name {_shown(name)} must be one plain folder name (letters, "
                   "digits, '.', '_' or '-', not starting with '.' and without '/')")  # fmt: skip
    if item["kind"] not in KINDS:
        raise _bad(where, f"{what} kind {_shown(item['kind'])} must be one of {', '.join(KINDS)}")
    config = _mapping(item.get("config", {}), f"{what} config", where)
    for key, value in config.items():
        if not _CONFIG_KEY.fullmatch(key):
            raise _bad(where, f"{what} config key {_shown(key)} is not a dotted config key")
        _text(value, f"{what} config {key}", where)
    return BundledModel(name, item["kind"], config)


def _check_models_own_their_members(
    models: list[BundledModel], files: dict[str, str], where: str
) -> None:
    """Each model is a folder with its manifest inside, or a file with its manifest beside
    it; every member under models/ belongs to exactly one listed model."""
    owned: set[str] = set()
    for model in models:
        base = f"{MODELS}/{model.name}"
        if base in files:
            mine = {base, base + MODEL_MANIFEST}
            whole = mine <= set(files)
        else:
            mine = {p for p in files if p.startswith(base + "/")}
            whole = f"{base}/{MODEL_MANIFEST}" in mine
        if not whole:
            raise _bad(where, f"lists the model {model.name} without its files and manifest")
        if mine & owned:
            raise _bad(where, f"lists the model {model.name} twice or over another's files")
        owned |= mine
    stray = sorted(p for p in files if p.startswith(f"{MODELS}/") and p not in owned)
    if stray:
        raise _bad(where, f"has {_shown(stray[0])} under {MODELS}/, which no listed model owns")


def _source_only(item: Any, index: int, where: str) -> SourceOnly:
    what = f"source_only[{index}]"
    item = _mapping(item, what, where)
    wanted = [f.name for f in fields(SourceOnly)]
    if sorted(item) != sorted(wanted):
        raise _bad(where, f"{what} must have {', '.join(wanted)}, not {_shown(sorted(item))}")
    return SourceOnly(*(_text(item[k], f"{what} {k}", where) for k in wanted))


def _mapping(value: Any, what: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, f"{what} must be a mapping, not {type(value).__name__}")
    return value


def _list(value: Any, what: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(where, f"{what} must be a list, not {type(value).__name__}")
    return value


def _text(value: Any, what: str, where: str) -> str:
    """Printable text (no control, format or surrogate characters: it reaches a terminal
    and a config file) of a sane length."""
    if not (isinstance(value, str) and len(value) <= _TEXT_MAX_CHARS and value.isprintable()):
        raise _bad(where, f"{what} must be printable text, not {_shown(value)}")
    return value


def _texts(value: Any, what: str, where: str) -> list[str]:
    return [_text(v, f"{what}[{i}]", where) for i, v in enumerate(_list(value, what, where))]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
