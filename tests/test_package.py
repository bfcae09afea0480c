"""The package as a user installs it: a wheel built from the repository carries the packs,
the example config, the service unit and the model catalog, and runs `sori demo` from a
fresh venv outside the checkout; `--help` and commands that do not hear or speak import
no extras."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENV = os.environ | {"PYTHONPATH": str(REPO / "device")}
EXTRAS = ("numpy", "soxr", "soundfile", "sounddevice", "vosk", "sherpa_onnx", "onnxruntime",
          "llama_cpp", "piper", "paho", "httpx")  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Built from a copy of the sources, so the checkout gets no build/ or egg-info."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("device", "intents", "models"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(out)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (built,) = out.glob("sori-*.whl")
    return built


def test_wheel_carries_the_shipped_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in ("sori/_shipped/sori.example.toml", "sori/_shipped/sori.service",
                 "sori/_shipped/catalog.toml", "sori/_shipped/intents/ko/lights.yaml",
                 "sori/_shipped/intents/en/commands.yaml"):  # fmt: skip
        assert path in names, path
    packs = {p.name for p in (REPO / "intents" / "ko").glob("*.yaml")}
    assert packs == {Path(n).name for n in names if n.startswith("sori/_shipped/intents/ko/")}


def test_installed_wheel_runs_demo_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # The runtime dependencies come from this venv's site-packages, through a .pth after the
    # new venv's own (so its sori, the wheel's, wins over the editable checkout's finder).
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # without PYTHONPATH: a checkout on it looks to pip like sori already installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SORI_CONFIG")}
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
         "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=120, env=env,
    )  # fmt: skip
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        [str(venv / "bin" / "sori"), "demo", "--json"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"intent": "HassTurnOn"' in done.stdout, done.stdout
    where = subprocess.run(
        [str(python), "-c", "import sori, sori.core.shipped as s; print(sori.__file__); "
         "print(s.shipped_path('intents')); print(s.shipped_path('catalog.toml'))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert all(str(venv) in line for line in where), where
    listed = subprocess.run(
        [str(venv / "bin" / "sori"), "models", "list"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "sherpa-onnx-streaming-zipformer-korean-2024-06-16" in listed.stdout, listed.stderr


@pytest.mark.parametrize(
    "argv", [["--help"], ["demo"], ["intent", "거실 불 켜줘"], ["models", "list"],
             ["replay", "--help"], ["run", "--help"]],
)  # fmt: skip
def test_commands_that_do_not_hear_import_no_extras(argv):
    code = (
        "import sys, contextlib, io\nfrom sori.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
        f"print(sorted(m for m in {EXTRAS!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


def test_missing_extra_is_named():
    """numpy blocked: `sori replay` says which extra to install, exit 2, no traceback."""
    code = (
        "import sys\nsys.modules['numpy'] = None\nfrom sori.cli import main\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "replay", "x.wav"], env=ENV, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "pip install 'sori[audio]'" in done.stderr and "Traceback" not in done.stderr


def test_replay_format_names_match_the_audio_module():
    from sori.commands.replay import RAW_FORMAT_NAMES
    from sori.hearing.audio.format import RAW_FORMATS

    assert sorted(RAW_FORMATS) == list(RAW_FORMAT_NAMES)
