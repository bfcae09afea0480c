"""Install an offline bundle on a device with no network: unpack it with every member
checked against the manifest (a damaged, altered or hostile bundle installs nothing), check
the config it brings, then install the wheels into a venv (`pip install --no-index`), the
models into the model store (each in one rename, so a half-copied model never has its name),
and the config unless one is there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sori.core.config import parse_config, parse_toml
from sori.core.config.edit import replace_config, set_keys
from sori.core.errors import BundleError, ConfigError
from sori.provisioning.bundle.extract import StepFailed, unpack_checked
from sori.provisioning.bundle.layout import CONFIG, MODELS, REMAKE, WHEELS, Manifest
from sori.provisioning.models.store import MANIFEST as MODEL_MANIFEST
from sori.provisioning.models.store import PARTIAL, move_in

Say = Callable[[str], None]
DEFAULT_CONFIG = Path("~/.config/sori/sori.toml")
"""Where the bundle's config goes unless --config names another file."""


@dataclass(frozen=True)
class InstallOptions:
    bundle: Path
    """The bundle tar."""
    venv: Path | None
    """Venv to install the wheels into (created when missing); None: no wheels."""
    models_dir: Path
    """Model store to install the models into."""
    config: Path
    """Config file to write."""
    force: bool = False
    """Overwrite an existing config file."""
    system_site_packages: bool = False
    """Create the venv with the system's packages visible (JetPack's CUDA builds)."""


def install_bundle(options: InstallOptions, say: Say) -> dict[str, Any]:
    """Verify and install; a summary for --json. Raises BundleError (bad bundle, nothing
    installed) or StepFailed."""
    root = options.models_dir.expanduser()
    try:
        (root / PARTIAL).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StepFailed(f"cannot create the model store {root}: {exc}") from None
    work = Path(tempfile.mkdtemp(prefix="bundle.", dir=root / PARTIAL))
    try:
        manifest = unpack_checked(options.bundle, work, say)
        values = {key: value.replace("{path}", str(root / m.name))
                  for m in manifest.models for key, value in m.config.items()}  # fmt: skip
        config = _checked_config(options.bundle, work / CONFIG, values)
        summary: dict[str, Any] = {
            "bundle": str(options.bundle),
            "board": manifest.board,
            "sori_version": manifest.sori_version,
            "source_only": [s.__dict__ for s in manifest.source_only],
        }
        summary["wheels"] = _install_wheels(options, work / WHEELS, manifest, say)
        summary["models"] = _install_models(root, work / MODELS, manifest, say)
        summary["config"] = _install_config(options, config, values, manifest, say)
        for item in manifest.source_only:
            say(f"{item.package} has no wheel for this board; build it here with {item.build}")
        return summary
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _checked_config(bundle: Path, unpacked: Path, values: dict[str, str]) -> str:
    """The bundle's config with the models' keys set, once it loads: checked before any
    wheel or model is installed, so a bad one leaves the device as it was."""
    try:
        text = set_keys(unpacked, values)
        parse_config(parse_toml(text, CONFIG), source=CONFIG)
    except (ConfigError, UnicodeDecodeError) as exc:
        raise BundleError(
            f"{bundle}: the config it brings does not load ({exc}); {REMAKE}"
        ) from None
    except OSError as exc:
        raise StepFailed(
            f"reading the config unpacked in {unpacked.parent} failed: {exc}"
        ) from None
    return text


def _install_wheels(
    options: InstallOptions, wheels: Path, manifest: Manifest, say: Say
) -> list[str]:
    if options.venv is None:
        say("no --venv: wheels not installed")
        return []
    if not manifest.wheels:
        say("the bundle holds no wheels")
        return []
    venv = options.venv.expanduser()
    python = venv / "bin" / "python"
    if not python.exists():
        say(f"creating the venv {venv}")
        argv = [sys.executable, "-m", "venv", str(venv)]
        if options.system_site_packages:
            argv.append("--system-site-packages")
        _run(argv, "creating the venv")
    has_pip = subprocess.run([str(python), "-c", "import pip"], capture_output=True)
    pip = [str(python), "-m", "pip"] if has_pip.returncode == 0 else [
        sys.executable, "-m", "pip", "--python", str(python)]  # fmt: skip
    files = [str(wheels / name) for name in manifest.wheels]
    say(f"pip install {len(files)} wheels into {venv} (offline)")
    # --no-deps: the bundle holds the resolved set; a source-only requirement missing from it
    # must not make pip look for an index. --isolated: no local pip config adds sources.
    _run([*pip, "--isolated", "install", "--no-index", "--find-links", str(wheels),
          "--no-deps", "-q", *files], "pip install")  # fmt: skip
    return list(manifest.wheels)


def _install_models(root: Path, models: Path, manifest: Manifest, say: Say) -> list[dict]:
    installed = []
    for model in manifest.models:
        source = models / model.name
        say(f"installing model {model.name} into {root}")
        beside = models / f"{model.name}{MODEL_MANIFEST}"  # a single file's manifest
        try:  # the bundle was unpacked in the store's .partial: the same file system
            target = move_in(root, model.name, source, beside if source.is_file() else None)
        except OSError as exc:
            raise StepFailed(f"installing {model.name} into {root} failed: {exc}") from None
        installed.append({"name": model.name, "kind": model.kind, "path": str(target)})
    return installed


def _install_config(
    options: InstallOptions, text: str, values: dict[str, str], manifest: Manifest, say: Say
) -> dict[str, Any]:
    target = options.config.expanduser()
    if target.exists() and not options.force:
        say(f"{target} exists: left as it is (--force replaces it); the models' keys: "
            + ", ".join(f"{k} = {v!r}" for k, v in values.items()))  # fmt: skip
        return {"path": str(target), "written": False, "keys": values}
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_config(target, text)  # atomic; 0600 when it holds a secret (an edge api_key)
    say(f"config written to {target} (board profile {manifest.board})")
    return {"path": str(target), "written": True, "keys": values}


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise StepFailed(f"{what} failed: {done.stderr.strip()[-600:]}")
