"""What a bundle holds and where: the manifest (JSON) that lists every member with its
sha256, and SHA256SUMS beside it for `sha256sum -c` on a device before anything runs.

    manifest.json       this Manifest
    SHA256SUMS          sha256sum's format, every member but itself
    wheels/*.whl        the sori wheel and its dependencies for the target platform
    models/NAME[/...]   each model as installed in the local store, with its
                        .sori-manifest.json
    config/sori.toml    the board profile's config (model paths are set at install)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from sori.errors import BundleError

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
WHEELS = "wheels"
MODELS = "models"
CONFIG = "config/sori.toml"
FORMAT = 1
"""Manifest format; a reader refuses a newer one."""


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
    format: int = FORMAT
    """Manifest format version."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> Manifest:
        try:
            data: dict[str, Any] = json.loads(text)
            if data.get("format", 0) > FORMAT:
                raise BundleError(
                    f"{where}: bundle format {data['format']} is newer than this sori reads "
                    f"({FORMAT}); install it with the sori version that made it"
                )
            data["source_only"] = [SourceOnly(**s) for s in data["source_only"]]
            data["models"] = [BundledModel(**m) for m in data["models"]]
            return cls(**data)
        except (ValueError, TypeError, KeyError) as exc:
            raise BundleError(
                f"{where}: manifest.json is not a sori bundle manifest ({exc})"
            ) from None


def sums_text(files: dict[str, str]) -> str:
    """SHA256SUMS in sha256sum's format."""
    return "".join(f"{digest}  {path}\n" for path, digest in sorted(files.items()))
