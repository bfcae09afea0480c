"""Build an offline bundle: the sori wheel (built from this checkout, or given), its
dependencies as wheels for the board's platform (`pip download --only-binary=:all:
--platform ...`), the models of the board's profile from the local model store, and the
profile's config, in one tar with a manifest of sha256 checksums.

A dependency with no wheel for the platform is listed in the manifest with what the device
needs to build it, instead of failing the bundle.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from sori.core.config.edit import set_keys
from sori.core.errors import BundleError
from sori.core.shipped import shipped_path
from sori.provisioning.board import PROFILES
from sori.provisioning.bundle.layout import (
    CONFIG,
    MANIFEST,
    MODELS,
    SUMS,
    WHEELS,
    BundledModel,
    Manifest,
    SourceOnly,
    sums_text,
)
from sori.provisioning.models import find_entry, installed_path, load_catalog
from sori.provisioning.models.store import MANIFEST as MODEL_MANIFEST
from sori.provisioning.models.store import sha256_of, verify

log = logging.getLogger(__name__)

_GLIBC = range(17, 36)
"""The manylinux_2_N tags a target accepts, every N up to its glibc: Raspberry Pi OS
bookworm has glibc 2.36, JetPack 6 (Ubuntu 22.04) 2.35, so N runs to 35. Each one is
listed because pip does not widen a given --platform tag to older ones, and some aarch64
wheels carry only manylinux_2_24, _2_26 or _2_27 (kiwisolver, soxr, numpy have a _2_28
alias today; a release without it would otherwise be passed over)."""


def _tags(machine: str) -> list[str]:
    return [f"manylinux2014_{machine}", *(f"manylinux_2_{v}_{machine}" for v in _GLIBC)]


PLATFORMS = {name: _tags("x86_64" if name == "x86" else "aarch64") for name in PROFILES}
"""pip platform tags per board profile."""
DEFAULT_EXTRAS = ("audio", "llm", "speech")
"""What a speaker runs: hearing, thinking, speaking and acting."""
LLAMA_HINT = (
    "cmake and a C++ compiler (apt-get install build-essential cmake python3-dev); "
    "CMAKE_ARGS='{cmake}' pip install llama-cpp-python, as scripts/install.sh does"
)
BUILD_HINTS = {"llama-cpp-python": LLAMA_HINT}
"""What the device needs for a package that has no wheel for it."""
DEFAULT_HINT = (
    "a C compiler and the Python headers (apt-get install build-essential python3-dev); "
    "pip builds it from its sdist when the device is online"
)
Say = Callable[[str], None]


@dataclass(frozen=True)
class PackOptions:
    board: str
    """Board profile (sori.provisioning.board.PROFILES) whose platform, models and config to
    pack."""
    output: Path
    """The tar to write."""
    platforms: list[str] = field(default_factory=list)
    """pip platform tags; empty: PLATFORMS[board]."""
    python_version: str = f"{sys.version_info.major}.{sys.version_info.minor}"
    """Target Python, major.minor."""
    extras: list[str] = field(default_factory=lambda: list(DEFAULT_EXTRAS))
    """sori extras whose dependencies are packed."""
    wheels_from: Path | None = None
    """A local wheelhouse to take every wheel from, with no index (offline)."""
    find_links: Path | None = None
    """An extra wheelhouse pip looks in besides the index."""
    sori_wheel: Path | None = None
    """The sori wheel to pack; None builds one from this checkout."""
    requirements: list[str] = field(default_factory=list)
    """Requirements to pack instead of the sori wheel's own (with its extras)."""
    models_dir: Path | None = None
    """Local model store to take the profile's models from (None: no models)."""
    catalog: Path | None = None
    """Model catalog (None: the shipped one)."""


def pack(options: PackOptions, say: Say) -> Manifest:
    """Write the bundle; its manifest. Raises BundleError (or ModelError) with the fix."""
    profile = PROFILES[options.board]
    platforms = options.platforms or PLATFORMS[options.board]
    models = _models(options, profile.models)  # before any slow step: a missing model fails fast
    with tempfile.TemporaryDirectory(prefix="sori-bundle.") as tmp:
        stage = Path(tmp)
        wheels = stage / WHEELS
        wheels.mkdir()
        sori_wheel = options.sori_wheel or _build_sori_wheel(stage / "build", say)
        if not sori_wheel.is_file():
            raise BundleError(f"sori wheel {sori_wheel} does not exist; check --sori-wheel")
        shutil.copy2(sori_wheel, wheels / sori_wheel.name)
        version, requirements = _requirements(sori_wheel, options.extras, platforms)
        requirements = options.requirements or requirements
        source_only = []
        for req in requirements:
            say(f"pip download {req} ({platforms[0]}, py{options.python_version})")
            missing = _download(req, wheels, platforms, options)
            while missing and _pure_wheel(missing, wheels, options, say):
                missing = _download(req, wheels, platforms, options)  # now with that wheel
            if missing:
                hint = BUILD_HINTS.get(_name(missing), DEFAULT_HINT)
                say(f"{req}: no wheel of {missing} for {platforms[0]}; the device builds it")
                source_only.append(
                    SourceOnly(req, missing, hint.replace("{cmake}", profile.llama_cmake))
                )
        config = stage / CONFIG
        config.parent.mkdir()
        config.write_text(shipped_path("sori.example.toml").read_text(encoding="utf-8"))
        config.write_text(set_keys(config, {"board.profile": options.board}), encoding="utf-8")
        members: dict[str, Path] = {
            str(p.relative_to(stage)): p for p in sorted(wheels.iterdir())
        } | {CONFIG: config}
        for name, path in models:
            members |= _model_members(name, path)
        files = {arc: sha256_of(path) for arc, path in members.items()}
        manifest = Manifest(
            sori_version=version,
            board=options.board,
            platforms=platforms,
            python_version=options.python_version,
            extras=list(options.extras),
            wheels=sorted(p.name for p in wheels.iterdir()),
            source_only=source_only,
            models=[_bundled(options, name) for name, _ in models],
            files=files,
            sizes={arc: path.stat().st_size for arc, path in members.items()},
        )
        (stage / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
        sums = files | {MANIFEST: sha256_of(stage / MANIFEST)}
        (stage / SUMS).write_text(sums_text(sums), encoding="utf-8")
        say(f"writing {options.output} ({len(files)} members)")
        _write_tar(options.output, [(MANIFEST, stage / MANIFEST), (SUMS, stage / SUMS),
                                    *members.items()])  # fmt: skip
    return manifest


def _models(options: PackOptions, names: list[str]) -> list[tuple[str, Path]]:
    if options.models_dir is None:
        return []
    entries = load_catalog(options.catalog)
    root = options.models_dir
    found, missing = [], []
    for name in names:
        entry = find_entry(entries, name)
        path = installed_path(root, entry)
        if path is None:
            missing.append(name)
            continue
        problems = verify(root, entry)
        if problems:
            raise BundleError("; ".join(problems))
        found.append((name, path))
    if missing:
        where = "" if options.catalog is None else f" --catalog {options.catalog}"
        raise BundleError(
            f"the {options.board} profile needs {', '.join(missing)}, not installed in {root}; "
            f"run `sori models fetch {' '.join(missing)}{where} --dir {root}` first, "
            "or bundle without models (--no-models)"
        )
    return found


def _bundled(options: PackOptions, name: str) -> BundledModel:
    entry = find_entry(load_catalog(options.catalog), name)
    return BundledModel(entry.name, entry.kind, dict(entry.config))


def _model_members(name: str, path: Path) -> dict[str, Path]:
    if path.is_dir():
        return {f"{MODELS}/{p.relative_to(path.parent)}": p
                for p in sorted(path.rglob("*")) if p.is_file()}  # fmt: skip
    manifest = path.with_name(path.name + MODEL_MANIFEST)
    return {f"{MODELS}/{name}": path, f"{MODELS}/{manifest.name}": manifest}


def _build_sori_wheel(build: Path, say: Say) -> Path:
    """Build the sori wheel from the checkout this sori runs from, in a copy of it (so the
    checkout gets no build/ or egg-info)."""
    checkout = Path(__file__).resolve().parents[4]
    if not (checkout / "pyproject.toml").is_file():
        raise BundleError(
            "this sori is not running from a checkout, so it cannot build its wheel; "
            "give one with --sori-wheel FILE (pip wheel --no-deps . in a clone)"
        )
    say(f"building the sori wheel from {checkout}")
    src = build / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        src.mkdir(parents=True, exist_ok=True)
        shutil.copy2(checkout / name, src / name)
    for name in ("device", "intents", "models"):
        shutil.copytree(checkout / name, src / name, ignore=ignore)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(build)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise BundleError(f"building the sori wheel failed: {done.stderr.strip()[-400:]}")
    (wheel,) = build.glob("sori-*.whl")
    return wheel


def _requirements(wheel: Path, extras: list[str], platforms: list[str]) -> tuple[str, list[str]]:
    """The wheel's version and its requirements with `extras` on the target platform."""
    from packaging.requirements import Requirement  # a dependency of pip and setuptools

    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(z.read(meta).decode())
    machine = "x86_64" if platforms[0].endswith("x86_64") else "aarch64"
    lines = [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]

    def applies(req: Requirement, extra: str) -> bool:
        env = {"extra": extra, "platform_machine": machine, "sys_platform": "linux"}
        return req.marker is None or req.marker.evaluate(env)

    chosen, todo = {""}, list(extras)
    while todo:  # sori[all] names sori[audio,...]: follow the self-references
        extra = todo.pop()
        if extra not in chosen:
            chosen.add(extra)
            todo += [x for r in lines if r.name == "sori" and applies(r, extra) for x in r.extras]
    out: list[str] = []
    for req in lines:
        text = f"{req.name}{req.specifier}"
        if req.name != "sori" and text not in out and any(applies(req, e) for e in chosen):
            out.append(text)
    return metadata["Version"], out


def _download(req: str, dest: Path, platforms: list[str], options: PackOptions) -> str | None:
    """Download `req` and its dependencies as wheels; None, or the package that has none."""
    abi = "cp" + options.python_version.replace(".", "")
    argv = [sys.executable, "-m", "pip"]
    if options.wheels_from:  # offline: only the wheelhouse, whatever pip's config says
        argv += ["--isolated", "download", "--no-index", "--find-links", str(options.wheels_from)]
    else:
        argv += ["download"]
        if options.find_links:
            argv += ["--find-links", str(options.find_links)]
    argv += ["--find-links", str(dest), "--only-binary=:all:", "--dest", str(dest),
             "--python-version", options.python_version, "--implementation", "cp",
             "--abi", abi, "--abi", "abi3", "--abi", "none", "-q"]  # fmt: skip
    for platform in platforms:
        argv += ["--platform", platform]
    done = subprocess.run([*argv, req], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    found = re.search(r"No matching distribution found for (\S+)", done.stderr)
    if found:
        return _name(found.group(1))
    raise BundleError(f"pip download {req} failed: {done.stderr.strip()[-400:]}")


NATIVE = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".rs", ".cu", "CMakeLists.txt", "Cargo.toml")
"""Files that mark an sdist as native code (not buildable once for every board here)."""


def _pure_wheel(package: str, dest: Path, options: PackOptions, say: Say) -> bool:
    """Build a dependency published only as source into `dest` when it is pure Python (a
    py3-none-any wheel installs on any board); False when it is native, or cannot be built.
    The sdist is looked into first, so native code (llama.cpp) is never compiled here."""
    if package in BUILD_HINTS or any(
        _name(w.name.split("-")[0]) == package for w in dest.glob("*.whl")
    ):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "pip"]
        source = []  # offline: the wheelhouse only, and this Python's setuptools builds
        if options.wheels_from:
            source = ["--isolated", "--no-index", "--find-links", str(options.wheels_from),
                      "--no-build-isolation"]  # fmt: skip
        done = subprocess.run(
            [*argv, "download", *source, "--no-deps", "--no-binary", ":all:",
             "-q", "-d", tmp, package],
            capture_output=True, text=True,
        )  # fmt: skip
        sdists = [p for p in Path(tmp).iterdir() if p.name.endswith((".tar.gz", ".zip"))]
        if done.returncode != 0 or not sdists or _native(sdists[0]):
            return False
        say(f"{package}: published only as source, pure Python: building its wheel here")
        done = subprocess.run(
            [*argv, "wheel", *source, "--no-deps", "-q", "-w", tmp, str(sdists[0])],
            capture_output=True,
            text=True,
        )
        built = list(Path(tmp).glob("*-none-any.whl"))
        if done.returncode != 0 or not built:
            return False
        shutil.move(built[0], dest / built[0].name)
    return True


def _native(sdist: Path) -> bool:
    try:
        if sdist.name.endswith(".zip"):
            with zipfile.ZipFile(sdist) as z:
                names = z.namelist()
        else:
            with tarfile.open(sdist) as tar:
                names = tar.getnames()
    except (tarfile.TarError, zipfile.BadZipFile, OSError):
        return True
    return any(n.endswith(NATIVE) for n in names)


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _write_tar(output: Path, members: list[tuple[str, Path]]) -> None:
    """Written beside `output` and renamed: a half-written bundle never has its name."""
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.partial")
    try:
        with tarfile.open(partial, "w") as tar:
            for arcname, path in members:
                tar.add(path, arcname=arcname, recursive=False)
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
