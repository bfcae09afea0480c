"""`sori models fetch|verify|use|list` against a real HTTP server on loopback serving
archives built here: success, resume, wrong checksum, server errors, disk full."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from model_server import ModelServer
from sori.cli import main

REPO = Path(__file__).resolve().parents[1]
FILES = {"model.onnx": os.urandom(40_000), "tokens.txt": "가 1\n나 2\n".encode()}


def _tar(name: str, mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for rel, data in FILES.items():
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _zip(name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for rel, data in FILES.items():
            z.writestr(f"{name}/{rel}", data)
    return buffer.getvalue()


ARCHIVES = {
    "stt-bz2": ("tar.bz2", _tar("stt-bz2", "w:bz2")),
    "stt-gz": ("tar.gz", _tar("stt-gz", "w:gz")),
    "stt-zip": ("zip", _zip("stt-zip")),
    "voice.onnx": ("", os.urandom(30_000)),
}


@pytest.fixture
def server():
    served = ModelServer().start()
    yield served
    served.stop()


@pytest.fixture
def catalog(tmp_path, server):
    """A catalog of the test archives, all with their real sha256, served by `server`."""
    lines = []
    for name, (archive, data) in ARCHIVES.items():
        server.files[name] = data
        config = '{ "stt.backend" = "sherpa", "stt.sherpa.model_dir" = "{path}" }'
        lines.append(
            f'[[model]]\nname = "{name}"\nkind = "stt"\nlanguages = ["ko"]\n'
            f'urls = ["{server.url(name)}"]\narchive = "{archive}"\nsize_mb = 0.05\n'
            f'sha256 = "{hashlib.sha256(data).hexdigest()}"\nverified = true\n'
            f'license = "MIT"\nmemory_mb = 1\nmemory_measured = false\nboards = ["x86"]\n'
            f"config = {config}\n"
        )
    path = tmp_path / "catalog.toml"
    path.write_text("\n".join(lines))
    return path


def models(catalog, root, *argv):
    return main(["models", argv[0], "--catalog", str(catalog), "--dir", str(root), *argv[1:]])


def nothing_installed(root: Path, name: str) -> bool:
    return not (root / name).exists() and not list(root.glob(f"{name}*sori-manifest*"))


@pytest.mark.parametrize("name", ["stt-bz2", "stt-gz", "stt-zip"])
def test_fetch_unpacks_verifies_and_lists_installed(catalog, tmp_path, name, capsys):
    root = tmp_path / "models"
    assert models(catalog, root, "fetch", name) == 0
    assert (root / name / "model.onnx").read_bytes() == FILES["model.onnx"]
    assert (root / name / "tokens.txt").read_bytes() == FILES["tokens.txt"]
    assert not list((root / ".partial").iterdir())  # no leftovers
    capsys.readouterr()
    assert models(catalog, root, "list", "--json") == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows[name]["installed"] is True and rows[name]["path"] == str(root / name)
    assert rows["voice.onnx"]["installed"] is False
    assert {"kind", "languages", "urls", "size_mb", "sha256", "license", "memory_mb",
            "boards"} <= set(rows[name])  # fmt: skip
    assert models(catalog, root, "verify", name) == 0
    (root / name / "tokens.txt").write_text("changed")
    assert models(catalog, root, "verify", name) == 1
    assert "tokens.txt changed" in capsys.readouterr().out


def test_single_file_model_installs_as_the_file(catalog, tmp_path):
    root = tmp_path / "models"
    assert models(catalog, root, "fetch", "voice.onnx") == 0
    assert (root / "voice.onnx").read_bytes() == ARCHIVES["voice.onnx"][1]
    assert models(catalog, root, "verify", "voice.onnx") == 0


def test_resume_after_a_truncated_download(catalog, tmp_path, server, capsys):
    root = tmp_path / "models"
    server.cut_after["stt-bz2"] = 1000
    assert models(catalog, root, "fetch", "stt-bz2") == 2
    err = capsys.readouterr().err
    assert "run the same fetch again to resume" in err, err
    assert nothing_installed(root, "stt-bz2")
    assert (root / ".partial" / "stt-bz2.download").stat().st_size == 1000
    assert models(catalog, root, "fetch", "stt-bz2") == 0
    assert server.ranges[-1] == "bytes=1000-"  # resumed, not restarted
    assert (root / "stt-bz2" / "model.onnx").read_bytes() == FILES["model.onnx"]


def test_wrong_checksum_installs_nothing(catalog, tmp_path, server, capsys):
    root = tmp_path / "models"
    server.files["stt-gz"] = _tar("stt-gz", "w:gz") + b"tampered"
    assert models(catalog, root, "fetch", "stt-gz") == 2
    err = capsys.readouterr().err
    assert "checksum mismatch" in err and "deleted" in err
    assert nothing_installed(root, "stt-gz")
    assert not (root / ".partial" / "stt-gz.download").exists()


def test_server_error_is_named(catalog, tmp_path, server, capsys):
    root = tmp_path / "models"
    server.fail["stt-zip"] = True
    assert models(catalog, root, "fetch", "stt-zip") == 2
    assert "HTTP 500" in capsys.readouterr().err
    assert nothing_installed(root, "stt-zip")


def test_unverified_model_needs_consent(tmp_path, server, capsys):
    server.files["x.onnx"] = b"abc"
    catalog = tmp_path / "c.toml"
    catalog.write_text(
        f'[[model]]\nname = "x.onnx"\nkind = "vad"\nlanguages = ["*"]\n'
        f'urls = ["{server.url("x.onnx")}"]\narchive = ""\nsize_mb = 1\nsha256 = ""\n'
        'verified = false\nlicense = "MIT"\nmemory_mb = 1\nmemory_measured = false\n'
        'boards = ["x86"]\n'
    )
    root = tmp_path / "models"
    assert models(catalog, root, "fetch", "x.onnx") == 2
    assert "--allow-unverified" in capsys.readouterr().err
    assert models(catalog, root, "fetch", "x.onnx", "--allow-unverified") == 0
    assert hashlib.sha256(b"abc").hexdigest() in capsys.readouterr().err


def test_disk_full_leaves_nothing_installed(catalog, tmp_path):
    """The fetch runs in a subprocess whose files may not grow past 20 kB (RLIMIT_FSIZE):
    the write fails like a full disk."""
    root = tmp_path / "models"
    code = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000)); "
        "from sori.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "models", "fetch", "stt-bz2", "--catalog", str(catalog),
         "--dir", str(root)],
        capture_output=True, text=True, timeout=60,
        env=os.environ | {"PYTHONPATH": str(REPO / "device")},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "disk full" in done.stderr and "--dir" in done.stderr
    assert "Traceback" not in done.stderr
    assert nothing_installed(root, "stt-bz2")


def test_use_writes_the_config_keys(catalog, tmp_path, capsys):
    root = tmp_path / "models"
    config = tmp_path / "sori.toml"
    config.write_text('[intents]\nlanguage = "ko"\n\n[stt]\nbackend = "vosk"  # default\n')
    assert models(catalog, root, "use", "stt-gz", "--config", str(config)) == 2
    assert "not installed" in capsys.readouterr().err
    assert models(catalog, root, "fetch", "stt-gz") == 0
    assert models(catalog, root, "use", "stt-gz", "--config", str(config)) == 0
    from sori.core.config import load_config

    loaded = load_config(str(config))
    assert loaded.stt.backend == "sherpa"
    assert loaded.stt.sherpa.model_dir == str(root / "stt-gz")
    assert loaded.intents.language == "ko"  # the rest is kept


def test_bad_catalog_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "c.toml"
    bad.write_text('[[model]]\nname = "x"\n')
    assert main(["models", "list", "--catalog", str(bad)]) == 2
    assert "missing" in capsys.readouterr().err


def test_use_keeps_the_config_mode_and_follows_a_symlink(catalog, tmp_path):
    """`models use` rewrote a 0600 config (an edge api_key in it) as 0644 and replaced a
    symlinked config with a new file."""
    root = tmp_path / "models"
    assert models(catalog, root, "fetch", "stt-gz") == 0
    real = tmp_path / "etc" / "sori.toml"
    real.parent.mkdir()
    real.write_text('[stt]\nbackend = "vosk"\n')
    os.chmod(real, 0o600)
    link = tmp_path / "sori.toml"
    link.symlink_to(real)
    assert models(catalog, root, "use", "stt-gz", "--config", str(link)) == 0
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.stat().st_mode & 0o777 == 0o600
    assert 'backend = "sherpa"' in real.read_text()
    assert not list(tmp_path.glob(".sori.toml*")) and not list(real.parent.glob(".*"))


def test_use_makes_a_config_holding_a_secret_private(catalog, tmp_path):
    root = tmp_path / "models"
    assert models(catalog, root, "fetch", "stt-gz") == 0
    config = tmp_path / "sori.toml"
    config.write_text('[mqtt]\nurl = "mqtt://sori:hunter2@127.0.0.1:1883"\n')
    os.chmod(config, 0o644)
    assert models(catalog, root, "use", "stt-gz", "--config", str(config)) == 0
    assert config.stat().st_mode & 0o777 == 0o600


def test_use_refuses_a_model_that_changed_since_it_was_installed(catalog, tmp_path, capsys):
    root = tmp_path / "models"
    config = tmp_path / "sori.toml"
    config.write_text('[stt]\nbackend = "vosk"\n')
    assert models(catalog, root, "fetch", "stt-gz") == 0
    (root / "stt-gz" / "model.onnx").write_bytes(b"swapped")
    assert models(catalog, root, "verify", "stt-gz") == 1
    capsys.readouterr()
    assert models(catalog, root, "use", "stt-gz", "--config", str(config)) == 2
    err = capsys.readouterr().err
    assert "model.onnx changed" in err and "sori models fetch --force stt-gz" in err, err
    assert "config not changed" in err and "Traceback" not in err
    assert config.read_text() == '[stt]\nbackend = "vosk"\n'
    assert models(catalog, root, "fetch", "--force", "stt-gz") == 0
    assert models(catalog, root, "use", "stt-gz", "--config", str(config)) == 0
