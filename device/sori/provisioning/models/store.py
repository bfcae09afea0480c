"""The models folder: where fetched models live, installed atomically, with a manifest of
file checksums so `sori models verify` can tell a damaged install."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from sori.core.errors import ModelError
from sori.provisioning.models.catalog import CatalogEntry

SERVICE_DIR = Path("/var/lib/sori/models")
"""Models folder of the system service (systemd's StateDirectory=sori)."""
PARTIAL = ".partial"
"""Subfolder for downloads and unpacking in progress; never read as installed."""
MANIFEST = ".sori-manifest.json"
"""Inside an installed folder (or NAME.sori-manifest.json beside a file): checksums."""
UNPACKED_RATIO = 4.0
UNPACKED_SLACK_BYTES = 10_000_000
"""An archive may unpack to at most UNPACKED_RATIO times the catalog's size_mb plus this
(model weights compress little); a zip bomb is refused before the member that passes it."""
MAX_MEMBERS = 1_000
"""Most files an archive may hold (a model folder has a few dozen)."""

Member = TypeVar("Member", tarfile.TarInfo, zipfile.ZipInfo)


def default_models_dir() -> Path:
    """`$SORI_MODELS_DIR`, else ~/.local/share/sori/models (XDG_DATA_HOME respected)."""
    env = os.environ.get("SORI_MODELS_DIR")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "sori" / "models"


def installed_path(root: Path, entry: CatalogEntry) -> Path | None:
    """Where `entry` is installed under `root`, or None; only a completed install counts."""
    path = root / entry.name
    return path if path.exists() and _manifest_path(path).is_file() else None


def sha256_of(path: Path) -> str:
    """The file's sha256 in hex, read in 1 MiB blocks (models and bundles are large)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def install(root: Path, entry: CatalogEntry, download: Path, download_sha256: str) -> Path:
    """Unpack (or move) a verified download into root/NAME in one rename: a half-unpacked
    model never appears under its name. Replaces an older install of the same name."""
    partial = root / PARTIAL
    partial.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{entry.name}.", dir=partial))
    try:
        if entry.archive:
            most = int(entry.size_mb * 1e6 * UNPACKED_RATIO) + UNPACKED_SLACK_BYTES
            unpacked = _unpack(download, entry.archive, staging / "unpacked", most)
            files = {
                str(p.relative_to(unpacked)): sha256_of(p)
                for p in sorted(unpacked.rglob("*"))
                if p.is_file()
            }
            (unpacked / MANIFEST).write_text(_manifest(entry, download_sha256, files))
            ready, manifest = unpacked, None
        else:
            ready = staging / entry.name
            shutil.copyfile(download, ready)
            manifest = staging / (entry.name + MANIFEST)
            manifest.write_text(_manifest(entry, download_sha256, {entry.name: download_sha256}))
        return move_in(root, entry.name, ready, manifest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def move_in(root: Path, name: str, ready: Path, manifest: Path | None = None) -> Path:
    """Put `ready` (a model folder, or a file with its `manifest` beside it, both on the
    store's file system) at root/NAME with one rename, the manifest last, so a model is
    installed only once whole. An older install of NAME is replaced."""
    target = root / name
    scrap = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=root / PARTIAL))
    try:
        if target.exists():
            target.rename(scrap / "previous")
        ready.rename(target)
        if manifest is not None:
            manifest.rename(_manifest_path(target))
    finally:
        shutil.rmtree(scrap, ignore_errors=True)
    return target


def verify(root: Path, entry: CatalogEntry) -> list[str]:
    """Problems with the install of `entry` (empty when it is whole)."""
    path = installed_path(root, entry)
    if path is None:
        return [f"{entry.name} is not installed in {root}; run `sori models fetch {entry.name}`"]
    again = f"fetch it again: sori models fetch --force {entry.name}"
    try:
        manifest = json.loads(_manifest_path(path).read_text())
    except (OSError, ValueError, RecursionError) as exc:
        return [f"{entry.name}: manifest unreadable ({exc}); {again}"]
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return [f"{entry.name}: manifest is not a list of checksums; {again}"]
    problems = []
    if entry.sha256 and manifest.get("download_sha256") != entry.sha256:
        problems.append(
            f"{entry.name}: installed from a download whose sha256 is not the catalog's"
        )
    base = path if path.is_dir() else path.parent
    for rel, want in files.items():
        file = base / rel
        if not file.resolve().is_relative_to(base.resolve()):
            problems.append(f"{entry.name}: the manifest names {rel!r}, outside the model")
        elif not file.is_file():
            problems.append(f"{entry.name}: {rel} is missing")
        elif sha256_of(file) != want:
            problems.append(f"{entry.name}: {rel} changed since it was installed")
    if problems:
        problems[-1] += f"; {again}"
    return problems


def _manifest_path(path: Path) -> Path:
    if path.is_dir():
        return path / MANIFEST
    return path.with_name(path.name + MANIFEST)


def _manifest(entry: CatalogEntry, download_sha256: str, files: dict[str, str]) -> str:
    record = {"name": entry.name, "download_sha256": download_sha256, "files": files}
    return json.dumps(record, indent=1, ensure_ascii=False)


def _unpack(archive: Path, kind: str, into: Path, most_bytes: int) -> Path:
    """Unpack into `into`; the model's folder is the archive's single top-level folder if it
    has one, else `into` itself. Members that would land outside are refused, and so is an
    archive of more than `most_bytes` or MAX_MEMBERS files, before the member that passes."""
    into.mkdir()
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as z:
                for member in z.namelist():
                    target = (into / member).resolve()
                    if not target.is_relative_to(into.resolve()):
                        raise ModelError(f"{archive.name}: member {member!r} leaves the folder")
                # zipfile writes no more of a member than its declared size.
                sized = _bounded(z.infolist(), lambda m: m.file_size, most_bytes, archive)
                z.extractall(into, members=sized)
        else:
            mode = "r:bz2" if kind == "tar.bz2" else "r:gz"
            with tarfile.open(archive, mode) as t:
                sized = _bounded(t, lambda m: m.size, most_bytes, archive)
                t.extractall(into, members=sized, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            raise  # disk full and the like: the caller names it
        raise ModelError(f"{archive.name} is not a valid {kind} archive: {exc}") from None
    entries = list(into.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return into


def _bounded(
    members: Iterable[Member], size_of: Callable[[Member], int], most_bytes: int, archive: Path
) -> Iterator[Member]:
    """The members, read one at a time as they are unpacked, until their declared sizes add
    up past `most_bytes` or there are more than MAX_MEMBERS: then a ModelError."""
    total = 0
    for count, member in enumerate(members, 1):
        total += size_of(member)
        if count > MAX_MEMBERS:
            raise ModelError(
                f"{archive.name} holds more than {MAX_MEMBERS} files, not a model; refused: "
                "check the catalog entry's url"
            )
        if total > most_bytes:
            raise ModelError(
                f"{archive.name} unpacks to more than {most_bytes / 1e6:.0f} MB "
                f"({UNPACKED_RATIO:g} times the catalog's size_mb and "
                f"{UNPACKED_SLACK_BYTES / 1e6:g} MB); refused while unpacking: check the "
                "catalog entry's url and size_mb"
            )
        yield member
